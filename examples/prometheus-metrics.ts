// fencelock's metrics in Prometheus: the OpenTelemetry SDK with the Prometheus
// exporter, some lock traffic, and one scrape of /metrics printed to stdout.
//
//   npx tsx examples/prometheus-metrics.ts                                  # a throw-away local redis-server
//   REDIS_URL=redis://127.0.0.1:7001 npx tsx examples/prometheus-metrics.ts  # your own node
//
// METRICS_PORT serves /metrics on a fixed port (default: any free one). The
// script exits by itself once it has printed the scrape. In an application,
// import from 'fencelock' and 'fencelock/testing' rather than ../src.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { LockManager, LockTimeoutError } from '../src/index.js';
import { startRedisNode } from '../src/testing/index.js';

// 1. The SDK: a MeterProvider read by the Prometheus exporter, registered as the global provider,
//    which fencelock reports to by default. (Or hand it to one manager: { meterProvider }.)
const exporter = new PrometheusExporter({ preventServerStart: true });
const meterProvider = new MeterProvider({ readers: [exporter] });
metrics.setGlobalMeterProvider(meterProvider);

// 2. /metrics. The exporter can run its own server (port 9464 by default); here it is one route of ours.
const server = createServer((request, response) => {
  if (request.url === '/metrics') return exporter.getMetricsRequestHandler(request, response);
  response.statusCode = 404;
  response.end();
});
server.listen(Number(process.env.METRICS_PORT || 0), '127.0.0.1');
await once(server, 'listening');
const metricsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;

const local = process.env.REDIS_URL ? undefined : await startRedisNode();
const locks = new LockManager([process.env.REDIS_URL || local!.url], { ttl: 2_000, nodeTimeout: 100 });
try {
  // 3. Some traffic: locked work, a busy tryAcquire, and an acquire that gives up.
  for (let run = 0; run < 5; run++) await locks.withLock('example:report', async () => new Promise((r) => setTimeout(r, 5)));
  const invoice = await locks.acquire('example:invoice');
  if ((await locks.tryAcquire('example:invoice')) !== null) throw new Error('example:invoice should be busy');
  await locks.acquire('example:invoice', { timeout: 100 }).then(
    () => Promise.reject(new Error('example:invoice should have timed out')),
    (error: unknown) => {
      if (!(error instanceof LockTimeoutError)) throw error;
    },
  );
  await invoice.release();

  // 4. What Prometheus would scrape.
  const scrape = await fetch(metricsUrl);
  if (!scrape.ok) throw new Error(`GET ${metricsUrl}: HTTP ${scrape.status}`);
  console.log(await scrape.text());
} finally {
  await locks.close();
  await local?.stop();
  server.close();
  await meterProvider.shutdown();
}
