// Jedis's two Sentinel clients across one failover, side by side in one JVM:
//
//   java -cp 'target/lib/*' Sentinel.java SENTINEL_PORT[,SENTINEL_PORT...] MASTER_NAME \
//       KEY_PREFIX TIMEOUT_MS
//
// - "pool": JedisSentinelPool (deprecated in Jedis 8, and what most deployments run), which
//   follows the sentinels' +switch-master messages and lends a Jedis per command;
// - "client": RedisSentinelClient, Jedis 8's replacement (a UnifiedJedis over a
//   SentineledConnectionProvider).
//
// Each INCRs its own key (KEY_PREFIX:NAME) a few times and WAITs on the same connection for
// both replicas to hold them ("durable NAME VALUE"); then this prints "ready PORT" (the
// primary both reached) and each INCRs its key every few milliseconds in a thread of its
// own, printing "incr NAME PORT VALUE" per acknowledged increment and "error NAME MESSAGE"
// per failed one (then it retries). tests/conformance/test_sentinel.py kills the primary
// after "ready" and judges the values. A client whose NEW_PRIMARY_WRITES increments were
// acknowledged on another port prints "ok NAME"; one with fewer by TIMEOUT_MS prints "FAIL
// NAME: ...". Then "N passed, N failed"; both clients are closed, and the JVM ends on its
// own (exit status 0) when both passed, with status 1 otherwise.

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisSentinelPool;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.RedisSentinelClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisException;

@SuppressWarnings("deprecation") // JedisSentinelPool: tested because it is so widely used
public class Sentinel {
    static final int TIMEOUT_MS = 500;
    static final int WRITE_GAP_MS = 10;
    static final int DURABLE_WRITES = 5;
    static final int REPLICAS = 2;
    static final long WAIT_MS = 5000;
    static final int NEW_PRIMARY_WRITES = 50;

    /** One Sentinel-aware client writing one counter. */
    interface Writer {
        String name();

        /** DURABLE_WRITES INCRs and a WAIT on one connection: {port, value, replicas}. */
        long[] durable(String key);

        /** One INCR: {port, value}; port -1 when the port it went to is not known. */
        long[] incr(String key);
    }

    static final class PoolWriter implements Writer {
        final JedisSentinelPool pool;

        PoolWriter(JedisSentinelPool pool) {
            this.pool = pool;
        }

        public String name() {
            return "pool";
        }

        public long[] durable(String key) {
            try (Jedis jedis = pool.getResource()) {
                long value = 0;
                for (int i = 0; i < DURABLE_WRITES; i++) {
                    value = jedis.incr(key);
                }
                long replicas = jedis.waitReplicas(REPLICAS, WAIT_MS);
                int port = jedis.getConnection().getHostAndPort().getPort();
                return new long[] {port, value, replicas};
            }
        }

        public long[] incr(String key) {
            try (Jedis jedis = pool.getResource()) {
                int port = jedis.getConnection().getHostAndPort().getPort();
                return new long[] {port, jedis.incr(key)};
            }
        }
    }

    static final class ClientWriter implements Writer {
        final RedisSentinelClient client;

        ClientWriter(RedisSentinelClient client) {
            this.client = client;
        }

        public String name() {
            return "client";
        }

        public long[] durable(String key) {
            // A pipeline holds one connection, so the WAIT counts these INCRs.
            int port = client.getCurrentMaster().getPort();
            Response<Long> value = null;
            Response<Long> replicas;
            try (Pipeline pipeline = (Pipeline) client.pipelined()) {
                for (int i = 0; i < DURABLE_WRITES; i++) {
                    value = pipeline.incr(key);
                }
                replicas = pipeline.waitReplicas(REPLICAS, WAIT_MS);
                pipeline.sync();
            }
            return new long[] {port, value.get(), replicas.get()};
        }

        public long[] incr(String key) {
            // The client picks the connection inside incr(): the port is known only when the
            // master it follows is the same before and after.
            int before = client.getCurrentMaster().getPort();
            long value = client.incr(key);
            int after = client.getCurrentMaster().getPort();
            return new long[] {before == after ? before : -1, value};
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println(
                "usage: Sentinel.java SENTINEL_PORTS MASTER_NAME KEY_PREFIX TIMEOUT_MS");
            System.exit(2);
        }
        Set<HostAndPort> sentinels = new HashSet<>();
        for (String port : args[0].split(",")) {
            sentinels.add(new HostAndPort("127.0.0.1", Integer.parseInt(port)));
        }
        JedisClientConfig config = DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(TIMEOUT_MS).socketTimeoutMillis(TIMEOUT_MS).build();
        int failed;
        try (JedisSentinelPool pool = new JedisSentinelPool(args[1], sentinels, config, config);
             RedisSentinelClient client = RedisSentinelClient.builder().masterName(args[1])
                 .sentinels(sentinels).clientConfig(config).sentinelClientConfig(config).build()) {
            Writer[] writers = {new PoolWriter(pool), new ClientWriter(client)};
            failed = run(writers, args[2], Long.parseLong(args[3]));
        }
        System.out.println((2 - failed) + " passed, " + failed + " failed");
        System.out.flush();
        if (failed > 0) {
            System.exit(1);
        }
    }

    /** Runs the writers to the end; how many failed. */
    static int run(Writer[] writers, String prefix, long timeoutMs) throws Exception {
        long first = -1;
        for (Writer writer : writers) {
            long[] durable = writer.durable(prefix + ":" + writer.name());
            if (durable[2] != REPLICAS || (first != -1 && durable[0] != first)) {
                System.out.println("FAIL " + writer.name() + ": WAIT answered " + durable[2]
                    + " on port " + durable[0] + " (first port " + first + ")");
                return writers.length;
            }
            first = durable[0];
            System.out.println("durable " + writer.name() + " " + durable[1]);
        }
        System.out.println("ready " + first);
        System.out.flush();
        long deadline = System.currentTimeMillis() + timeoutMs;
        Thread[] threads = new Thread[writers.length];
        AtomicReference<String>[] failures = newFailures(writers.length);
        for (int i = 0; i < writers.length; i++) {
            Writer writer = writers[i];
            AtomicReference<String> failure = failures[i];
            long oldPort = first;
            threads[i] = new Thread(() -> failure.set(
                write(writer, prefix + ":" + writer.name(), oldPort, deadline)));
            threads[i].start();
        }
        int failed = 0;
        for (int i = 0; i < writers.length; i++) {
            threads[i].join();
            String failure = failures[i].get();
            System.out.println(failure == null ? "ok " + writers[i].name()
                : "FAIL " + writers[i].name() + ": " + failure);
            failed += failure == null ? 0 : 1;
        }
        return failed;
    }

    @SuppressWarnings("unchecked")
    static AtomicReference<String>[] newFailures(int n) {
        AtomicReference<String>[] failures = new AtomicReference[n];
        for (int i = 0; i < n; i++) {
            failures[i] = new AtomicReference<>();
        }
        return failures;
    }

    /** INCRs until NEW_PRIMARY_WRITES land on a port other than oldPort: null, or why not. */
    static String write(Writer writer, String key, long oldPort, long deadline) {
        int onNewPrimary = 0;
        while (System.currentTimeMillis() < deadline && onNewPrimary < NEW_PRIMARY_WRITES) {
            try {
                long[] done = writer.incr(key);
                if (done[0] == -1) {
                    System.out.println("error " + writer.name() + " master changed during an INCR ("
                        + done[1] + ")");
                } else {
                    System.out.println("incr " + writer.name() + " " + done[0] + " " + done[1]);
                    onNewPrimary += done[0] != oldPort ? 1 : 0;
                }
            } catch (JedisException e) {
                System.out.println("error " + writer.name() + " " + e.getClass().getSimpleName()
                    + ": " + String.valueOf(e.getMessage()).replace('\n', ' '));
            }
            try {
                Thread.sleep(WRITE_GAP_MS);
            } catch (InterruptedException e) {
                return "interrupted";
            }
        }
        return onNewPrimary < NEW_PRIMARY_WRITES
            ? onNewPrimary + " increments reached a new primary by the deadline" : null;
    }
}
