// spymemcached's ketama ring over several memcached-protocol nodes: stores keys through it, and
// says where its locator puts each one.
//
//   java -cp target/lib/spymemcached-2.12.3.jar KetamaCheck.java COUNT HOST:PORT...
//
// Two rings, by how they name a node (KetamaNodeKeyFormatter.Format):
//   spymemcached  ConnectionFactoryBuilder with Locator.CONSISTENT and
//                 DefaultHashAlgorithm.KETAMA_HASH, as an application sets it up; the builder's
//                 locator is `new KetamaNodeLocator(nodes, hashAlg)`, whose format is
//                 SPYMEMCACHED: String.valueOf(the InetSocketAddress) less a leading "/".
//                 COUNT keys are written through it.
//   libmemcached  a DefaultConnectionFactory whose createLocator builds KetamaNodeLocator with
//                 Format.LIBMEMCACHED (InetSocketAddress.getHostName(), ":PORT" unless 11211);
//                 the builder has no way to ask for it. Only asked where keys would go.
//
// The keys are named as spinel-bench names its key space ("key:" and the zero-padded id, 20
// bytes). Prints "name RING INDEX NODE-NAME" for each node (the string hashed for its points,
// less "-REPETITION"), "place RING KEY INDEX" for each key (the locator's primary node, INDEX in
// the order given), "ok NAME" per check and "N passed, N failed".
// tests/conformance/test_ketama_java.py compares that with where the keys really are.

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

import net.spy.memcached.AddrUtil;
import net.spy.memcached.ConnectionFactory;
import net.spy.memcached.ConnectionFactoryBuilder;
import net.spy.memcached.FailureMode;
import net.spy.memcached.DefaultConnectionFactory;
import net.spy.memcached.DefaultHashAlgorithm;
import net.spy.memcached.KetamaNodeKeyFormatter;
import net.spy.memcached.KetamaNodeLocator;
import net.spy.memcached.MemcachedClient;
import net.spy.memcached.MemcachedNode;
import net.spy.memcached.NodeLocator;
import net.spy.memcached.internal.OperationFuture;

public class KetamaCheck {
    static final int KEY_SIZE = 20;
    // Held here: java.util.logging keeps loggers weakly, and a collected one loses its level.
    static final Logger SPY_LOG = Logger.getLogger("net.spy.memcached");

    static String benchKey(int id) {
        String digits = String.valueOf(id);
        StringBuilder key = new StringBuilder("key:");
        while (key.length() + digits.length() < KEY_SIZE) {
            key.append('0');
        }
        return key.append(digits).toString();
    }

    static NodeLocator report(String format, MemcachedClient client,
                              KetamaNodeKeyFormatter.Format nameFormat,
                              List<InetSocketAddress> addrs, int count) {
        NodeLocator locator = client.getNodeLocator();
        // Each node's name on the ring, as the locator's formatter makes it. (The client's
        // locator is a read-only view that wraps each node anew on every call, so nodes are
        // told apart by their addresses.)
        KetamaNodeKeyFormatter formatter = new KetamaNodeKeyFormatter(nameFormat);
        for (MemcachedNode node : locator.getAll()) {
            int at = addrs.indexOf(node.getSocketAddress());
            String name = formatter.getKeyForNode(node, 0);
            System.out.println("name " + format + " " + at + " "
                + name.substring(0, name.length() - 2));
        }
        for (int id = 0; id < count; id++) {
            String key = benchKey(id);
            int at = addrs.indexOf(locator.getPrimary(key).getSocketAddress());
            System.out.println("place " + format + " " + key + " " + at);
        }
        return locator;
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("net.spy.log.LoggerImpl", "net.spy.memcached.compat.log.SunLogger");
        SPY_LOG.setLevel(Level.WARNING);
        int count = Integer.parseInt(args[0]);
        List<String> servers = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            servers.add(args[i]);
        }
        List<InetSocketAddress> addrs = AddrUtil.getAddresses(String.join(" ", servers));

        // As an application sets up ketama: the builder's locator is
        // `new KetamaNodeLocator(nodes, hashAlg)`, whose names are Format.SPYMEMCACHED.
        // FailureMode.Retry: a set issued before its node's connection is up waits for it
        // (the default, Redistribute, would store it on another node, and the placement
        // checked here would then depend on how fast the connections came up).
        ConnectionFactory builder = new ConnectionFactoryBuilder()
            .setLocatorType(ConnectionFactoryBuilder.Locator.CONSISTENT)
            .setHashAlg(DefaultHashAlgorithm.KETAMA_HASH)
            .setFailureMode(FailureMode.Retry)
            .build();
        // Format.LIBMEMCACHED, which only a hand-built KetamaNodeLocator can have.
        ConnectionFactory libmemcached = new DefaultConnectionFactory() {
            @Override
            public NodeLocator createLocator(List<MemcachedNode> nodes) {
                return new KetamaNodeLocator(nodes, DefaultHashAlgorithm.KETAMA_HASH,
                    KetamaNodeKeyFormatter.Format.LIBMEMCACHED,
                    new HashMap<InetSocketAddress, Integer>());
            }
        };

        int passed = 0;
        int failed = 0;
        MemcachedClient client = new MemcachedClient(builder, addrs);
        try {
            List<OperationFuture<Boolean>> sets = new ArrayList<>();
            for (int id = 0; id < count; id++) {
                sets.add(client.set(benchKey(id), 0, "v"));
            }
            int stored = 0;
            for (OperationFuture<Boolean> f : sets) {
                if (Boolean.TRUE.equals(f.get(10, TimeUnit.SECONDS))) {
                    stored++;
                }
            }
            if (stored == count) {
                passed++;
                System.out.println("ok set_" + count + "_keys");
            } else {
                failed++;
                System.out.println("FAIL set_" + count + "_keys: " + stored + " stored");
            }
            report("spymemcached", client, KetamaNodeKeyFormatter.Format.SPYMEMCACHED, addrs,
                count);
        } finally {
            client.shutdown(5, TimeUnit.SECONDS);
        }
        // Only asked where it would put the keys: nothing is written through it.
        MemcachedClient other = new MemcachedClient(libmemcached, addrs);
        try {
            report("libmemcached", other, KetamaNodeKeyFormatter.Format.LIBMEMCACHED, addrs,
                count);
            passed++;
            System.out.println("ok libmemcached_format_locator");
        } finally {
            other.shutdown(5, TimeUnit.SECONDS);
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
