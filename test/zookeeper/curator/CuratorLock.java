// A Java service's side of a shared lock: Apache Curator's InterProcessMutex or InterProcessReadWriteLock on
// a path, driven line by line from stdin so that a test controls every step by events, not by sleeps.
//
//   java -cp <classes>:/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//     CuratorLock <connect string> <path> mutex|read|write
//
// stdin:  acquire <timeout ms>   prints "acquired", or "timeout" when the wait ran out
//         release                prints "released"
//         quit                   closes the client and exits
// stdout: "ready" once connected, then one line per command (or "error <message>").
// Commands run one after the other on the main thread: Curator's locks belong to the thread that took them.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorLock {
  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: CuratorLock <connect string> <path> mutex|read|write");
      System.exit(2);
    }
    String connectString = args[0];
    String path = args[1];
    CuratorFramework client =
        CuratorFrameworkFactory.newClient(connectString, 10_000, 10_000, new ExponentialBackoffRetry(100, 5));
    client.start();
    if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
      System.out.println("error could not connect to " + connectString);
      System.exit(1);
    }
    InterProcessLock lock = lockOf(client, path, args[2]);
    System.out.println("ready");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      String[] words = line.trim().split("\\s+");
      try {
        switch (words[0]) {
          case "acquire":
            // The design's call: acquire(timeout, unit), false when the wait ran out.
            boolean held = lock.acquire(Long.parseLong(words[1]), TimeUnit.MILLISECONDS);
            System.out.println(held ? "acquired" : "timeout");
            break;
          case "release":
            lock.release();
            System.out.println("released");
            break;
          case "quit":
            client.close();
            return;
          default:
            System.out.println("error unknown command " + words[0]);
        }
      } catch (Exception e) {
        System.out.println("error " + e);
      }
    }
    client.close();
  }

  /** The lock the service takes on `path`: a mutex, or one side of a read-write lock. */
  private static InterProcessLock lockOf(CuratorFramework client, String path, String kind) {
    switch (kind) {
      case "mutex":
        return new InterProcessMutex(client, path);
      case "read":
        return new InterProcessReadWriteLock(client, path).readLock();
      case "write":
        return new InterProcessReadWriteLock(client, path).writeLock();
      default:
        throw new IllegalArgumentException("kind must be mutex, read or write, got " + kind);
    }
  }
}
