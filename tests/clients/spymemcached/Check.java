// spymemcached with BinaryConnectionFactory (the binary protocol) against one memcached-protocol
// server.
//
//   java -cp target/lib/spymemcached-2.12.3.jar Check.java HOST:PORT KEY_PREFIX
//
// Runs every scenario in order, prints one line per check ("ok NAME" or "FAIL NAME: ..."),
// then "N passed, N failed", and exits 1 when any check failed. The expectations are what
// memcached 1.6 answers; tests/conformance/test_spymemcached.py runs this against both servers.

import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

import net.spy.memcached.AddrUtil;
import net.spy.memcached.BinaryConnectionFactory;
import net.spy.memcached.CASResponse;
import net.spy.memcached.CASValue;
import net.spy.memcached.MemcachedClient;
import net.spy.memcached.internal.OperationFuture;
import net.spy.memcached.transcoders.SerializingTranscoder;

public class Check {
    static final int ITEM_MAX_BYTES = 1024 * 1024;
    static final long OP_TIMEOUT_S = 10;

    interface Scenario {
        void run() throws Exception;
    }

    static MemcachedClient client;
    static String prefix;
    static String hostPort;
    // Sends byte[] as they are: the default transcoder would zlib them above 16 KiB.
    static SerializingTranscoder raw = new SerializingTranscoder(ITEM_MAX_BYTES * 4);

    static {
        raw.setCompressionThreshold(Integer.MAX_VALUE);
    }

    static String key(String name) {
        return prefix + "_" + name;
    }

    static void expect(Object actual, Object expected, String what) {
        boolean same = expected instanceof byte[] && actual instanceof byte[]
            ? Arrays.equals((byte[]) expected, (byte[]) actual)
            : Objects.equals(expected, actual);
        if (!same) {
            throw new AssertionError(what + ": expected " + show(expected) + ", got " + show(actual));
        }
    }

    static String show(Object o) {
        if (o instanceof byte[]) {
            byte[] b = (byte[]) o;
            return "byte[" + b.length + "]";
        }
        return String.valueOf(o);
    }

    static <T> T done(OperationFuture<T> f) throws Exception {
        return f.get(OP_TIMEOUT_S, TimeUnit.SECONDS);
    }

    static void basics() throws Exception {
        expect(client.get(key("missing")), null, "get missing");
        expect(done(client.set(key("s"), 0, "v1")), true, "set");
        expect(client.get(key("s")), "v1", "get");
        expect(done(client.set(key("i"), 0, 42)), true, "set int");
        expect(client.get(key("i")), 42, "get int (transcoder flags)");
        HashMap<String, List<Integer>> obj = new HashMap<>();
        obj.put("a", List.of(1, 2));
        expect(done(client.set(key("o"), 0, obj)), true, "set object");
        expect(client.get(key("o")), obj, "get serialized object");
        String longText = "compressible ".repeat(4000); // over 16 KiB: the transcoder zlibs it
        expect(done(client.set(key("z"), 0, longText)), true, "set compressed");
        expect(client.get(key("z")), longText, "get compressed");
    }

    static void addReplaceDelete() throws Exception {
        expect(done(client.replace(key("ar"), 0, "x")), false, "replace missing");
        expect(done(client.add(key("ar"), 0, "first")), true, "add");
        OperationFuture<Boolean> again = client.add(key("ar"), 0, "second");
        expect(done(again), false, "add existing");
        expect(again.getStatus().getMessage(), "Data exists for key.", "add existing message");
        expect(done(client.replace(key("ar"), 0, "third")), true, "replace");
        expect(client.get(key("ar")), "third", "get replaced");
        expect(done(client.delete(key("ar"))), true, "delete");
        OperationFuture<Boolean> gone = client.delete(key("ar"));
        expect(done(gone), false, "delete missing");
        expect(gone.getStatus().getMessage(), "Not found", "delete missing message");
    }

    static void getsCas() throws Exception {
        expect(client.gets(key("cas")), null, "gets missing");
        client.set(key("cas"), 0, "a").get();
        CASValue<Object> v = client.gets(key("cas"));
        expect(v.getValue(), "a", "gets value");
        expect(client.cas(key("cas"), v.getCas(), "b"), CASResponse.OK, "cas");
        expect(client.cas(key("cas"), v.getCas(), "c"), CASResponse.EXISTS, "stale cas");
        expect(client.cas(key("cas_missing"), v.getCas(), "c"), CASResponse.NOT_FOUND, "cas missing");
        expect(client.get(key("cas")), "b", "get after cas");
    }

    static void incrDecr() throws Exception {
        expect(client.incr(key("n"), 1), -1L, "incr missing (no default)");
        expect(client.incr(key("n"), 5, 10, 0), 10L, "incr creates with default");
        expect(client.incr(key("n"), 5), 15L, "incr");
        expect(client.decr(key("n"), 20), 0L, "decr stops at zero");
        expect(client.decr(key("d"), 3, 7, 0), 7L, "decr creates with default");
        expect(client.decr(key("d"), 3), 4L, "decr");
        expect(client.get(key("d")), "4", "counter as text (flags 0)");
        client.set(key("text"), 0, "abc").get();
        OperationFuture<Long> bad = client.asyncIncr(key("text"), 1);
        expect(done(bad), -1L, "incr non-numeric");
        expect(bad.getStatus().getMessage(), "Non-numeric server-side value for incr or decr",
            "incr non-numeric message");
    }

    static void appendPrependTouch() throws Exception {
        expect(done(client.append(key("ap"), "x")), false, "append missing");
        client.set(key("ap"), 0, "mid".getBytes(StandardCharsets.US_ASCII), raw).get();
        expect(done(client.append(key("ap"), "_end".getBytes(StandardCharsets.US_ASCII), raw)),
            true, "append");
        expect(done(client.prepend(key("ap"), "start_".getBytes(StandardCharsets.US_ASCII), raw)),
            true, "prepend");
        expect(client.get(key("ap"), raw), "start_mid_end".getBytes(StandardCharsets.US_ASCII),
            "appended");
        expect(done(client.touch(key("t_missing"), 100)), false, "touch missing");
        client.set(key("t"), 0, "t").get();
        expect(done(client.touch(key("t"), 100)), true, "touch");
        expect(client.getAndTouch(key("t_missing"), 100), null, "gat missing");
        expect(client.getAndTouch(key("t"), 100).getValue(), "t", "gat");
    }

    static void bulk() throws Exception {
        List<String> keys = new ArrayList<>();
        Map<String, Object> want = new HashMap<>();
        for (int i = 0; i < 20; i++) {
            keys.add(key("bulk_" + i));
            if (i < 15) {
                client.set(keys.get(i), 0, "v" + i).get();
                want.put(keys.get(i), "v" + i);
            }
        }
        expect(client.getBulk(keys), want, "getBulk");
    }

    static void binaryKeysValues() throws Exception {
        byte[] blob = new byte[256 * 4 + 7];
        for (int i = 0; i < blob.length; i++) {
            blob[i] = (byte) i;
        }
        client.set(key("blob"), 0, blob, raw).get();
        expect(client.get(key("blob"), raw), blob, "binary value");
        String text = "héllo wörld ✓";
        client.set(key("ключ"), 0, text).get();
        expect(client.get(key("ключ")), text, "unicode key and value");
    }

    static void largeValues() throws Exception {
        byte[] big = new byte[ITEM_MAX_BYTES - 1024];
        Arrays.fill(big, (byte) 'b');
        expect(done(client.set(key("big"), 0, big, raw)), true, "set near the limit");
        expect(client.get(key("big"), raw), big, "get near the limit");
        byte[] huge = new byte[ITEM_MAX_BYTES + 1];
        OperationFuture<Boolean> refused = client.set(key("huge"), 0, huge, raw);
        expect(done(refused), false, "set too large");
        expect(refused.getStatus().getMessage(), "Too large.", "too large message");
        expect(client.get(key("huge"), raw), null, "too large not stored");
        expect(client.get(key("big"), raw), big, "connection still frames replies");
    }

    static void statsVersions() throws Exception {
        Map<SocketAddress, String> versions = client.getVersions();
        expect(versions.size(), 1, "one version");
        String version = versions.values().iterator().next();
        if (!version.matches("1\\.6\\.\\d+.*")) {
            throw new AssertionError("version " + version);
        }
        Map<String, String> stats = client.getStats().values().iterator().next();
        expect(stats.get("version"), version, "stats version");
        if (Long.parseLong(stats.get("cmd_set")) < 1 || Long.parseLong(stats.get("pid")) < 1) {
            throw new AssertionError("stats " + stats);
        }
    }

    static void expiry() throws Exception {
        client.set(key("exp"), 1, "short").get();
        client.set(key("keep"), 100, "long").get();
        client.set(key("touched"), 100, "t").get();
        expect(done(client.touch(key("touched"), 1)), true, "touch to 1 s");
        Thread.sleep(2200);
        expect(client.get(key("exp")), null, "expired");
        expect(client.get(key("touched")), null, "touched expired");
        expect(client.get(key("keep")), "long", "not expired");
    }

    static void flush() throws Exception {
        client.set(key("fl"), 0, "x").get();
        expect(client.flush().get(OP_TIMEOUT_S, TimeUnit.SECONDS), true, "flush");
        expect(client.get(key("fl")), null, "flushed");
        client.set(key("fl"), 0, "y").get();
        expect(client.get(key("fl")), "y", "set after flush");
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: java -cp SPYMEMCACHED_JAR Check.java HOST:PORT KEY_PREFIX");
            System.exit(2);
        }
        System.setProperty("net.spy.log.LoggerImpl", "net.spy.memcached.compat.log.SunLogger");
        Logger.getLogger("net.spy.memcached").setLevel(Level.WARNING);
        hostPort = args[0];
        prefix = args[1];
        client = new MemcachedClient(new BinaryConnectionFactory(), AddrUtil.getAddresses(hostPort));

        Map<String, Scenario> scenarios = new java.util.LinkedHashMap<>();
        scenarios.put("basics", Check::basics);
        scenarios.put("add replace delete", Check::addReplaceDelete);
        scenarios.put("gets cas", Check::getsCas);
        scenarios.put("incr decr", Check::incrDecr);
        scenarios.put("append prepend touch", Check::appendPrependTouch);
        scenarios.put("getBulk", Check::bulk);
        scenarios.put("binary keys and values", Check::binaryKeysValues);
        scenarios.put("large values", Check::largeValues);
        scenarios.put("stats versions", Check::statsVersions);
        scenarios.put("expiry", Check::expiry);
        scenarios.put("flush", Check::flush); // last: it empties the whole server

        int passed = 0;
        int failed = 0;
        for (Map.Entry<String, Scenario> s : scenarios.entrySet()) {
            try {
                s.getValue().run();
                passed++;
                System.out.println("ok " + s.getKey());
            } catch (Throwable t) {
                failed++;
                System.out.println("FAIL " + s.getKey() + ": " + t);
            }
        }
        client.shutdown(5, TimeUnit.SECONDS);
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
