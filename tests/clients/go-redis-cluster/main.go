// go-redis v9's ClusterClient against a Redis Cluster: Spinel nodes, or redis-server nodes for
// the same scenarios.
//
//	go build -o bin/check . && bin/check -seeds HOST:PORT[,HOST:PORT...] -prefix PREFIX \
//	    [-replicated]
//
// Runs every scenario in order, prints one line per scenario ("ok NAME" or "FAIL NAME: ...",
// and "info NAME: ..." lines with what was observed), then "N passed, N failed", and exits 1
// when any scenario failed. tests/conformance/test_go_redis_cluster.py builds and runs it
// against 3-primary clusters with and without a replica per primary.
//
// -replicated says the replicas copy their primary's data (redis-server does; Spinel's
// replicas have no replication and hold nothing unless written directly). It only changes
// what reads served by a replica are expected to return: the value, or nothing.
//
// Every key starts with PREFIX; the cluster is the test's own (the dbsize scenario flushes it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

const slots = 16384

var (
	ctx        = context.Background()
	seeds      []string
	prefix     string
	replicated bool
	rdb        *redis.ClusterClient
)

func key(name string) string {
	return prefix + ":" + name
}

// tagged is a key in the hash slot of `tag`: every key with one tag is on one node.
func tagged(tag, name string) string {
	return "{" + prefix + ":" + tag + "}:" + name
}

func fail(format string, args ...interface{}) {
	panic(fmt.Errorf(format, args...))
}

func check(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func expect(got, want interface{}, what string) {
	if fmt.Sprint(got) != fmt.Sprint(want) {
		fail("%s: expected %v, got %v", what, want, got)
	}
}

func info(name, format string, args ...interface{}) {
	fmt.Printf("info %s: %s\n", name, fmt.Sprintf(format, args...))
}

// ---------------------------------------------------------------------------------------------
// The slot map, read from CLUSTER SLOTS through the client itself.

type shard struct {
	start, end int
	primary    string
	replicas   []string
}

var cachedMap []shard

// slotMap reads the map anew; primaryOf uses the last one read.
func slotMap() []shard {
	got, err := rdb.ClusterSlots(ctx).Result()
	check(err, "CLUSTER SLOTS")
	var shards []shard
	for _, s := range got {
		sh := shard{start: s.Start, end: s.End, primary: s.Nodes[0].Addr}
		for _, n := range s.Nodes[1:] {
			sh.replicas = append(sh.replicas, n.Addr)
		}
		shards = append(shards, sh)
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].start < shards[j].start })
	cachedMap = shards
	return shards
}

// primaries counts the distinct primaries in CLUSTER SLOTS (one may serve several ranges).
func primaries() int {
	seen := map[string]bool{}
	for _, sh := range slotMap() {
		seen[sh.primary] = true
	}
	return len(seen)
}

func primaryOf(slot int) string {
	if cachedMap == nil {
		slotMap()
	}
	for _, sh := range cachedMap {
		if sh.start <= slot && slot <= sh.end {
			return sh.primary
		}
	}
	fail("slot %d is not served", slot)
	return ""
}

func slotOf(k string) int {
	slot, err := rdb.ClusterKeySlot(ctx, k).Result()
	check(err, "CLUSTER KEYSLOT "+k)
	return int(slot)
}

// direct is a plain client on one node: commands reach it as they are, redirects come back as
// errors.
func direct(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
}

func movedTo(err error) (slot int, addr string, ok bool) {
	if err == nil {
		return 0, "", false
	}
	var s string
	n, _ := fmt.Sscanf(err.Error(), "MOVED %d %s", &slot, &s)
	return slot, s, n == 2
}

// ---------------------------------------------------------------------------------------------
// Scenarios

func setGet1000() {
	perPrimary := map[string]int{}
	for i := 0; i < 1000; i++ {
		k := key(fmt.Sprintf("sg:%d", i))
		check(rdb.Set(ctx, k, fmt.Sprintf("v%d", i), 0).Err(), "SET "+k)
	}
	for i := 0; i < 1000; i++ {
		k := key(fmt.Sprintf("sg:%d", i))
		v, err := rdb.Get(ctx, k).Result()
		check(err, "GET "+k)
		expect(v, fmt.Sprintf("v%d", i), "GET "+k)
		node, err := rdb.MasterForKey(ctx, k)
		check(err, "MasterForKey")
		perPrimary[node.Options().Addr]++
	}
	expect(len(perPrimary), primaries(), "primaries holding the 1000 keys")
	// Each primary holds its own keys: a direct GET there finds them.
	for addr := range perPrimary {
		c := direct(addr)
		for i := 0; i < 1000; i++ {
			k := key(fmt.Sprintf("sg:%d", i))
			if primaryOf(slotOfLocal(k)) != addr {
				continue
			}
			v, err := c.Get(ctx, k).Result()
			check(err, "direct GET "+k+" on "+addr)
			expect(v, fmt.Sprintf("v%d", i), "direct GET "+k)
			break
		}
		c.Close()
	}
}

func msetMgetTagged() {
	var args []interface{}
	var keys []string
	for i := 0; i < 20; i++ {
		k := tagged("user", fmt.Sprintf("f%d", i))
		keys = append(keys, k)
		args = append(args, k, fmt.Sprintf("x%d", i))
	}
	check(rdb.MSet(ctx, args...).Err(), "MSET")
	vals, err := rdb.MGet(ctx, keys...).Result()
	check(err, "MGET")
	for i, v := range vals {
		expect(v, fmt.Sprintf("x%d", i), "MGET "+keys[i])
	}
	slot := slotOf(keys[0])
	for _, k := range keys {
		expect(slotOf(k), slot, "slot of "+k)
	}
	n, err := rdb.Exists(ctx, keys...).Result()
	check(err, "EXISTS")
	expect(n, len(keys), "EXISTS")
	n, err = rdb.Del(ctx, keys[:5]...).Result()
	check(err, "DEL")
	expect(n, 5, "DEL")
	vals, err = rdb.MGet(ctx, keys[:6]...).Result()
	check(err, "MGET after DEL")
	expect(vals, []interface{}{nil, nil, nil, nil, nil, "x5"}, "MGET after DEL")
}

// twoSlots gives two keys in different slots, both served by one primary.
func twoSlots() (string, string) {
	a := key("cross:a")
	primary := primaryOf(slotOfLocal(a))
	for i := 0; ; i++ {
		b := key(fmt.Sprintf("cross:b%d", i))
		if slotOfLocal(b) != slotOfLocal(a) && primaryOf(slotOfLocal(b)) == primary {
			return a, b
		}
	}
}

func crossSlot() {
	a, b := twoSlots()
	node := direct(primaryOf(slotOfLocal(a)))
	defer node.Close()
	err := node.Do(ctx, "MSET", a, "1", b, "2").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT ") {
		fail("raw MSET %s %s on their node: expected CROSSSLOT, got %v", a, b, err)
	}
	info("crossslot", "raw MSET on node: %v", err)
	// A cross-slot MGET through the cluster client goes to the first key's node, which refuses.
	err = rdb.MGet(ctx, a, b).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT ") {
		fail("cluster MGET %s %s: expected CROSSSLOT, got %v", a, b, err)
	}
	// Keys on different primaries: still CROSSSLOT (it is checked before ownership).
	var far string
	for i := 0; ; i++ {
		far = key(fmt.Sprintf("cross:far%d", i))
		if primaryOf(slotOfLocal(far)) != primaryOf(slotOfLocal(a)) {
			break
		}
	}
	err = node.Do(ctx, "DEL", a, far).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT ") {
		fail("raw DEL across primaries: expected CROSSSLOT, got %v", err)
	}
	// Nothing was written.
	n, err := rdb.Exists(ctx, a).Result()
	check(err, "EXISTS")
	expect(n, 0, "EXISTS after refused MSET")
}

func pipelines() {
	const count = 500
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < count; i++ {
			p.Set(ctx, key(fmt.Sprintf("pipe:%d", i)), fmt.Sprintf("p%d", i), 0)
		}
		return nil
	})
	check(err, "pipelined SET")
	expect(len(cmds), count, "pipelined SET replies")
	var gets []*redis.StringCmd
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < count; i++ {
			gets = append(gets, p.Get(ctx, key(fmt.Sprintf("pipe:%d", i))))
		}
		return nil
	})
	check(err, "pipelined GET")
	nodes := map[string]bool{}
	for i, g := range gets {
		expect(g.Val(), fmt.Sprintf("p%d", i), "pipelined GET "+key(fmt.Sprintf("pipe:%d", i)))
		nodes[primaryOf(slotOfLocal(key(fmt.Sprintf("pipe:%d", i))))] = true
	}
	expect(len(nodes), primaries(), "primaries the pipeline reached")
}

func txPipelined() {
	a, b, c := tagged("tx", "a"), tagged("tx", "b"), tagged("tx", "c")
	var incr, incrBy *redis.IntCmd
	var get *redis.StringCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, a, "10", 0)
		incr = p.Incr(ctx, a)
		incrBy = p.IncrBy(ctx, b, 5)
		p.Set(ctx, c, "tx-value", 0)
		get = p.Get(ctx, c)
		return nil
	})
	check(err, "TxPipelined")
	expect(incr.Val(), 11, "INCR in MULTI")
	expect(incrBy.Val(), 5, "INCRBY in MULTI")
	expect(get.Val(), "tx-value", "GET in MULTI")
	// An error inside the transaction (INCR of a non-number) fails that command only.
	var bad *redis.IntCmd
	var after *redis.IntCmd
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		bad = p.Incr(ctx, c)
		after = p.Incr(ctx, a)
		return nil
	})
	if err == nil || bad.Err() == nil {
		fail("INCR of a string in MULTI: expected an error, got %v", bad.Err())
	}
	expect(after.Val(), 12, "INCR after the failed one in MULTI")
	// WATCH on a tagged key, through the cluster client.
	check(rdb.Watch(ctx, func(tx *redis.Tx) error {
		n, err := tx.Get(ctx, a).Int()
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, a, n*2, 0)
			return nil
		})
		return err
	}, a), "WATCH/MULTI/EXEC")
	v, err := rdb.Get(ctx, a).Result()
	check(err, "GET")
	expect(v, "24", "value set by the watched transaction")
}

func counters() {
	const n = 100
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for round := 0; round < 10; round++ {
			for i := 0; i < n; i++ {
				p.Incr(ctx, key(fmt.Sprintf("ctr:%d", i)))
			}
		}
		return nil
	})
	check(err, "pipelined INCR")
	for i := 0; i < n; i++ {
		v, err := rdb.Get(ctx, key(fmt.Sprintf("ctr:%d", i))).Int()
		check(err, "GET counter")
		expect(v, 10, "counter "+key(fmt.Sprintf("ctr:%d", i)))
	}
	k := key("ctr:0")
	expect(rdb.IncrBy(ctx, k, 32).Val(), 42, "INCRBY")
	expect(rdb.Decr(ctx, k).Val(), 41, "DECR")
	expect(rdb.DecrBy(ctx, k, 41).Val(), 0, "DECRBY")
	expect(rdb.IncrByFloat(ctx, k, 1.5).Val(), 1.5, "INCRBYFLOAT")
	err = rdb.Incr(ctx, k).Err()
	if err == nil || !strings.Contains(err.Error(), "not an integer") {
		fail("INCR of 1.5: expected 'not an integer', got %v", err)
	}
}

func expiry() {
	k := key("exp:long")
	check(rdb.Set(ctx, k, "v", 0).Err(), "SET")
	expect(rdb.TTL(ctx, k).Val(), time.Duration(-1), "TTL without expiry")
	ok, err := rdb.Expire(ctx, k, 100*time.Second).Result()
	check(err, "EXPIRE")
	expect(ok, true, "EXPIRE")
	ttl := rdb.TTL(ctx, k).Val()
	if ttl <= 90*time.Second || ttl > 100*time.Second {
		fail("TTL after EXPIRE 100: %v", ttl)
	}
	pttl := rdb.PTTL(ctx, k).Val()
	if pttl <= 90*time.Second || pttl > 100*time.Second {
		fail("PTTL after EXPIRE 100: %v", pttl)
	}
	expect(rdb.Persist(ctx, k).Val(), true, "PERSIST")
	expect(rdb.TTL(ctx, k).Val(), time.Duration(-1), "TTL after PERSIST")
	expect(rdb.TTL(ctx, key("exp:missing")).Val(), time.Duration(-2), "TTL of a missing key")
	expect(rdb.Expire(ctx, key("exp:missing"), time.Second).Val(), false, "EXPIRE missing")
	// Short expiries on keys all over the slots: gone after they pass.
	var short []string
	for i := 0; i < 30; i++ {
		s := key(fmt.Sprintf("exp:short:%d", i))
		short = append(short, s)
		check(rdb.Set(ctx, s, "v", 150*time.Millisecond).Err(), "SET PX")
	}
	check(rdb.PExpire(ctx, short[0], 100*time.Millisecond).Err(), "PEXPIRE")
	time.Sleep(300 * time.Millisecond)
	for _, s := range short {
		err := rdb.Get(ctx, s).Err()
		if err != redis.Nil {
			fail("GET %s after its expiry: expected nil, got %v", s, err)
		}
	}
	check(rdb.SetEx(ctx, k, "w", 50*time.Second).Err(), "SETEX")
	ttl = rdb.TTL(ctx, k).Val()
	if ttl <= 40*time.Second || ttl > 50*time.Second {
		fail("TTL after SETEX 50: %v", ttl)
	}
}

func collections() {
	h := tagged("coll", "hash")
	check(rdb.HSet(ctx, h, "a", "1", "b", "2", "c", "3").Err(), "HSET")
	all, err := rdb.HGetAll(ctx, h).Result()
	check(err, "HGETALL")
	expect(all, map[string]string{"a": "1", "b": "2", "c": "3"}, "HGETALL")
	expect(rdb.HIncrBy(ctx, h, "a", 9).Val(), 10, "HINCRBY")
	expect(rdb.HLen(ctx, h).Val(), 3, "HLEN")
	expect(rdb.HDel(ctx, h, "b").Val(), 1, "HDEL")
	expect(rdb.HMGet(ctx, h, "a", "b").Val(), []interface{}{"10", nil}, "HMGET")

	l, l2 := tagged("coll", "list"), tagged("coll", "list2")
	check(rdb.RPush(ctx, l, "a", "b", "c").Err(), "RPUSH")
	check(rdb.LPush(ctx, l, "z").Err(), "LPUSH")
	expect(rdb.LRange(ctx, l, 0, -1).Val(), []string{"z", "a", "b", "c"}, "LRANGE")
	expect(rdb.LMove(ctx, l, l2, "RIGHT", "LEFT").Val(), "c", "LMOVE (two keys, one slot)")
	expect(rdb.LLen(ctx, l).Val(), 3, "LLEN")
	expect(rdb.LRange(ctx, l2, 0, -1).Val(), []string{"c"}, "LRANGE after LMOVE")
	v, err := rdb.BLPop(ctx, time.Second, l2).Result()
	check(err, "BLPOP")
	expect(v, []string{l2, "c"}, "BLPOP")

	s1, s2, s3 := tagged("coll", "set1"), tagged("coll", "set2"), tagged("coll", "union")
	check(rdb.SAdd(ctx, s1, "a", "b", "c").Err(), "SADD")
	check(rdb.SAdd(ctx, s2, "b", "c", "d").Err(), "SADD")
	inter := rdb.SInter(ctx, s1, s2).Val()
	sort.Strings(inter)
	expect(inter, []string{"b", "c"}, "SINTER")
	expect(rdb.SUnionStore(ctx, s3, s1, s2).Val(), 4, "SUNIONSTORE")
	expect(rdb.SIsMember(ctx, s3, "d").Val(), true, "SISMEMBER")
	expect(rdb.SCard(ctx, s3).Val(), 4, "SCARD")

	z := tagged("coll", "zset")
	check(rdb.ZAdd(ctx, z, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 1, Member: "a"}).Err(),
		"ZADD")
	expect(rdb.ZRange(ctx, z, 0, -1).Val(), []string{"a", "b"}, "ZRANGE")
	expect(rdb.Type(ctx, z).Val(), "zset", "TYPE")
	expect(rdb.Type(ctx, h).Val(), "hash", "TYPE")

	// Collections on keys in different slots refuse, as strings do.
	err = rdb.SInter(ctx, s1, key("coll:elsewhere:set")).Err()
	if slotOfLocal(s1) != slotOfLocal(key("coll:elsewhere:set")) &&
		(err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT ")) {
		fail("SINTER across slots: expected CROSSSLOT, got %v", err)
	}
}

func forEachShard() {
	nodes := primaries()
	advertised := map[string]bool{}
	for _, sh := range slotMap() {
		for _, r := range sh.replicas {
			advertised[r] = true
		}
	}
	nodes += len(advertised)
	pings := make(chan string, 64)
	check(rdb.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		pong, err := c.Ping(ctx).Result()
		if err != nil {
			return err
		}
		pings <- c.Options().Addr + " " + pong
		return nil
	}), "ForEachShard PING")
	close(pings)
	expect(len(pings), nodes, "nodes that answered PING")

	// DBSIZE: flush, write keys all over the slots, and the primaries' sizes add up to them.
	check(rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return c.FlushAll(ctx).Err()
	}), "ForEachMaster FLUSHALL")
	const count = 1000
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < count; i++ {
			p.Set(ctx, key(fmt.Sprintf("size:%d", i)), "v", 0)
		}
		return nil
	})
	check(err, "pipelined SET")
	sizes := make(chan int64, 64)
	check(rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		n, err := c.DBSize(ctx).Result()
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("primary %s holds none of the keys", c.Options().Addr)
		}
		sizes <- n
		return nil
	}), "ForEachMaster DBSIZE")
	close(sizes)
	var total int64
	var each []string
	for n := range sizes {
		total += n
		each = append(each, fmt.Sprint(n))
	}
	expect(total, count, "DBSIZE summed over the primaries")
	info("foreach_shard", "%d nodes answered PING; primaries' DBSIZE %s", nodes,
		strings.Join(each, "+"))
	// The cluster client's own DBSIZE goes to one node only: at most the total.
	if n := rdb.DBSize(ctx).Val(); n > count {
		fail("cluster DBSIZE %d > %d", n, count)
	}
}

// readOnlyPrimaries: with ReadOnly false (the default) every read goes to the primary, in a
// cluster with replicas too.
func readOnlyFalse() {
	for i := 0; i < 200; i++ {
		k := key(fmt.Sprintf("sg:%d", i))
		check(rdb.Set(ctx, k, fmt.Sprintf("w%d", i), 0).Err(), "SET")
	}
	for i := 0; i < 200; i++ {
		v, err := rdb.Get(ctx, key(fmt.Sprintf("sg:%d", i))).Result()
		check(err, "GET")
		expect(v, fmt.Sprintf("w%d", i), "GET with ReadOnly false")
	}
}

// replicasOf reads CLUSTER NODES: each primary's address -> its replicas' addresses. These are
// all the replicas the cluster knows, where CLUSTER SLOTS may leave some out (redis-server
// leaves out failed replicas; Spinel leaves out every replica, as it never feeds them).
func replicasOf() map[string][]string {
	text, err := rdb.ClusterNodes(ctx).Result()
	check(err, "CLUSTER NODES")
	addrOf := map[string]string{}
	primaryID := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			fail("CLUSTER NODES line %q", line)
		}
		addrOf[f[0]] = strings.SplitN(f[1], "@", 2)[0]
		if strings.Contains(f[2], "slave") {
			primaryID[f[0]] = f[3]
		}
	}
	out := map[string][]string{}
	for id, primary := range primaryID {
		out[addrOf[primary]] = append(out[addrOf[primary]], addrOf[id])
	}
	return out
}

// readOnlyTrue: a second client with ReadOnly true sends READONLY to the replicas that CLUSTER
// SLOTS names and routes read-only commands (per COMMAND's flags) to them. What such a read
// finds depends on replication, which Spinel does not have (-replicated says whether the
// replicas copy their primary), and on whether CLUSTER SLOTS names the replicas at all (with
// none named, go-redis reads from the primaries).
func readOnlyTrue() {
	ro := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, ReadOnly: true})
	defer ro.Close()
	advertised := 0
	for _, sh := range slotMap() {
		advertised += len(sh.replicas)
	}
	const count = 200
	for i := 0; i < count; i++ {
		check(ro.Set(ctx, key(fmt.Sprintf("ro:%d", i)), fmt.Sprintf("r%d", i), 0).Err(),
			"SET through the ReadOnly client")
	}
	if replicated {
		// Until every replica has the writes: WAIT on each primary.
		check(ro.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			n, err := c.Do(ctx, "WAIT", 1, 5000).Int()
			if err == nil && n < 1 {
				err = fmt.Errorf("WAIT 1 on %s: %d replicas", c.Options().Addr, n)
			}
			return err
		}), "WAIT")
	}
	hits, misses := 0, 0
	for i := 0; i < count; i++ {
		v, err := ro.Get(ctx, key(fmt.Sprintf("ro:%d", i))).Result()
		switch {
		case err == redis.Nil:
			misses++
		case err != nil:
			fail("GET through the ReadOnly client: %v", err)
		default:
			expect(v, fmt.Sprintf("r%d", i), "GET through the ReadOnly client")
			hits++
		}
	}
	info("readonly_true", "CLUSTER SLOTS names %d replicas; %d reads: %d found, %d nil "+
		"(replicated: %v)", advertised, count, hits, misses, replicated)
	switch {
	case advertised == 0:
		// No replica to read from: the reads went to the primaries.
		expect(hits, count, "reads with no replica in CLUSTER SLOTS")
	case replicated:
		expect(hits, count, "reads served by replicas that replicate")
	default:
		// Every read went to a replica (none was sent on to the primary by a MOVED), and the
		// replicas hold none of the keys.
		expect(misses, count, "reads served by replicas without replication")
	}
	check(ro.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		return c.Ping(ctx).Err()
	}), "ForEachShard PING through the ReadOnly client")

	// Straight to each replica CLUSTER NODES names: without READONLY a read of its primary's
	// slot is MOVED to the primary; with READONLY it is answered there (nil without
	// replication); a write is MOVED either way; READWRITE ends READONLY.
	replicas := replicasOf()
	total := 0
	for _, sh := range slotMap() {
		k := key(fmt.Sprintf("ro:slot%d", sh.start))
		for i := 0; slotOfLocal(k) < sh.start || slotOfLocal(k) > sh.end; i++ {
			k = key(fmt.Sprintf("ro:slot%d:%d", sh.start, i))
		}
		check(rdb.Set(ctx, k, "here", 0).Err(), "SET")
		if replicated {
			c := direct(sh.primary)
			check(c.Do(ctx, "WAIT", len(replicas[sh.primary]), 5000).Err(), "WAIT")
			c.Close()
		}
		for _, addr := range replicas[sh.primary] {
			total++
			func() {
				c := direct(addr)
				defer c.Close()
				err := c.Get(ctx, k).Err()
				slot, to, moved := movedTo(err)
				if !moved || slot != slotOfLocal(k) || to != sh.primary {
					fail("GET %s on replica %s without READONLY: expected MOVED %d %s, got %v",
						k, addr, slotOfLocal(k), sh.primary, err)
				}
				conn := c.Conn()
				defer conn.Close()
				check(conn.ReadOnly(ctx).Err(), "READONLY")
				v, err := conn.Get(ctx, k).Result()
				if replicated {
					check(err, "GET on a replica after READONLY")
					expect(v, "here", "GET on a replica after READONLY")
				} else if err != redis.Nil {
					fail("GET %s on replica %s after READONLY: expected nil, got %q %v",
						k, addr, v, err)
				}
				err = conn.Set(ctx, k, "x", 0).Err()
				if _, _, moved := movedTo(err); !moved {
					fail("SET on replica %s after READONLY: expected MOVED, got %v", addr, err)
				}
				check(conn.ReadWrite(ctx).Err(), "READWRITE")
				err = conn.Get(ctx, k).Err()
				if _, _, moved := movedTo(err); !moved {
					fail("GET on replica %s after READWRITE: expected MOVED, got %v", addr, err)
				}
			}()
		}
	}
	if total == 0 {
		fail("CLUSTER NODES names no replica")
	}
}

// redirect: the test moves a slot to another primary by hand (the key moved along), and the
// client, whose slot map still names the old primary, follows the MOVED.
func redirect() {
	k := key("moving")
	check(rdb.Set(ctx, k, "moved-value", 0).Err(), "SET")
	expect(rdb.Get(ctx, k).Val(), "moved-value", "GET before the move")
	slot := slotOfLocal(k)
	shards := slotMap()
	oldAddr := primaryOf(slot)
	var newAddr string
	var others []string
	for _, sh := range shards {
		if sh.primary != oldAddr && newAddr == "" {
			newAddr = sh.primary
		} else if sh.primary != oldAddr {
			others = append(others, sh.primary)
		}
	}
	old, dst := direct(oldAddr), direct(newAddr)
	defer old.Close()
	defer dst.Close()
	newID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	check(err, "CLUSTER MYID")

	// The key leaves the old primary (redis-server refuses to give away a slot it holds
	// keys in)...
	v, err := old.Get(ctx, k).Result()
	check(err, "GET on the old primary")
	check(old.Del(ctx, k).Err(), "DEL on the old primary")
	// ...the slot is given to the new one: the new owner first, then the old, then the rest,
	// as redis-cli does; replicas refuse SETSLOT ("only with masters") on both servers.
	for _, addr := range append([]string{newAddr, oldAddr}, others...) {
		c := direct(addr)
		err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", newID).Err()
		c.Close()
		check(err, "CLUSTER SETSLOT on "+addr)
	}
	for _, sh := range shards {
		for _, addr := range sh.replicas {
			c := direct(addr)
			err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", newID).Err()
			c.Close()
			info("redirect", "SETSLOT on replica %s: %v", addr, err)
		}
	}
	// ...and arrives on the new one.
	check(dst.Set(ctx, k, v, 0).Err(), "SET on the new primary")
	err = old.Get(ctx, k).Err()
	if s, to, moved := movedTo(err); !moved || s != slot || to != newAddr {
		fail("GET on the old primary after the move: expected MOVED %d %s, got %v", slot,
			newAddr, err)
	}
	// The client still maps the slot to the old primary, is sent on by its MOVED, and reads.
	stale, err := rdb.MasterForKey(ctx, k)
	check(err, "MasterForKey")
	expect(stale.Options().Addr, oldAddr, "the client's slot map before it meets the MOVED")
	got, err := rdb.Get(ctx, k).Result()
	check(err, "GET after the move")
	expect(got, "moved-value", "GET after the move")
	check(rdb.Set(ctx, k, "again", 0).Err(), "SET after the move")
	expect(dst.Get(ctx, k).Val(), "again", "the write landed on the new primary")
	// In time the client reloads its map from the cluster and goes straight to the new owner.
	deadline := time.Now().Add(5 * time.Second)
	for {
		rdb.ReloadState(ctx)
		node, err := rdb.MasterForKey(ctx, k)
		check(err, "MasterForKey")
		if node.Options().Addr == newAddr {
			break
		}
		if time.Now().After(deadline) {
			fail("the client's map still names %s for slot %d after 5 s", node.Options().Addr,
				slot)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------------------------------

// slotOfLocal is CRC16 of the key (or its hash tag) mod 16384, as the client computes it.
func slotOfLocal(k string) int {
	if s := strings.IndexByte(k, '{'); s >= 0 {
		if e := strings.IndexByte(k[s+1:], '}'); e > 0 {
			k = k[s+1 : s+1+e]
		}
	}
	var crc uint16
	for i := 0; i < len(k); i++ {
		crc ^= uint16(k[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % slots
}

func keyslotAgrees() {
	for i := 0; i < 200; i++ {
		k := key(fmt.Sprintf("slot:%d", i))
		if i%3 == 0 {
			k = tagged(fmt.Sprintf("t%d", i), "x")
		}
		expect(slotOf(k), slotOfLocal(k), "CLUSTER KEYSLOT "+k)
	}
	expect(slotOfLocal("123456789"), 12739, "CRC16 check value")
}

func main() {
	seedList := flag.String("seeds", "", "comma-separated host:port of cluster nodes")
	flag.StringVar(&prefix, "prefix", "gocluster", "key prefix")
	flag.BoolVar(&replicated, "replicated", false, "replicas hold their primary's data")
	flag.Parse()
	if *seedList == "" {
		fmt.Fprintln(os.Stderr, "usage: check -seeds HOST:PORT[,...] -prefix P [-replicated]")
		os.Exit(2)
	}
	seeds = strings.Split(*seedList, ",")
	rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
	defer rdb.Close()

	type scenario struct {
		name string
		run  func()
	}
	scenarios := []scenario{
		{"keyslot", keyslotAgrees},
		{"set_get_1000", setGet1000},
		{"mset_mget_hash_tag", msetMgetTagged},
		{"crossslot", crossSlot},
		{"pipelined_500", pipelines},
		{"tx_pipelined", txPipelined},
		{"incr_counters", counters},
		{"expire_ttl", expiry},
		{"hash_list_set", collections},
		{"foreach_shard_dbsize", forEachShard},
		{"readonly_false", readOnlyFalse},
	}
	if len(replicasOf()) > 0 {
		scenarios = append(scenarios, scenario{"readonly_true", readOnlyTrue})
	}
	scenarios = append(scenarios, scenario{"moved_redirect", redirect})

	passed, failed := 0, 0
	for _, s := range scenarios {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					if e, ok := r.(error); ok {
						err = e
					} else {
						err = errors.New(fmt.Sprint(r))
					}
				}
			}()
			s.run()
			return nil
		}()
		if err != nil {
			failed++
			fmt.Printf("FAIL %s: %v\n", s.name, err)
		} else {
			passed++
			fmt.Printf("ok %s\n", s.name)
		}
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
