// Number formatting shared by the markdown tables and the chart.

/** 3 significant digits for small numbers, whole numbers with thousands separators above 100. */
export function num(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  if (abs >= 100) return Math.round(value).toLocaleString('en-US');
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  if (abs === 0) return '0';
  return value.toPrecision(2);
}

export function firstLine(text: string | undefined, max = 90): string {
  const line = (text ?? '').split('\n')[0]?.trim() ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
