"""Redis streams: XADD ... XINFO wire transcripts, byte for byte as redis-server 7.0.15 sends
them (recorded from it and validated with CONFORMANCE_TARGET=redis), in RESP2 and RESP3; the
keyspace events streams raise; MULTI and scripts; hostile IDs and counts. Time-dependent
replies (auto IDs, idle times) are left out of the transcript."""

import shlex

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

TRANSCRIPT = [  # (command, RESP2 reply, RESP3 reply), run in order
    ('xadd s 1-1 a 1 b 2', b'$3\r\n1-1\r\n', b'$3\r\n1-1\r\n'),
    ('xadd s 1-1 a 1', b'-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n', b'-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n'),
    ('xadd s 0-0 a 1', b'-ERR The ID specified in XADD must be greater than 0-0\r\n', b'-ERR The ID specified in XADD must be greater than 0-0\r\n'),
    ('xadd s 1-* a 1', b'$3\r\n1-2\r\n', b'$3\r\n1-2\r\n'),
    ('xadd s 5 c 3', b'$3\r\n5-0\r\n', b'$3\r\n5-0\r\n'),
    ('xadd s 5-* c 3', b'$3\r\n5-1\r\n', b'$3\r\n5-1\r\n'),
    ('xadd s maxlen 2 7-0 x y', b'$3\r\n7-0\r\n', b'$3\r\n7-0\r\n'),
    ('xlen s', b':2\r\n', b':2\r\n'),
    ('xrange s - +', b'*2\r\n*2\r\n$3\r\n5-1\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$3\r\n7-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n', b'*2\r\n*2\r\n$3\r\n5-1\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$3\r\n7-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n'),
    ('xrevrange s + - count 1', b'*1\r\n*2\r\n$3\r\n7-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n', b'*1\r\n*2\r\n$3\r\n7-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n'),
    ('xrange s (5-0 +', b'*2\r\n*2\r\n$3\r\n5-1\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$3\r\n7-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n', b'*2\r\n*2\r\n$3\r\n5-1\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$3\r\n7-0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n'),
    ('xrange s - (1-1', b'*0\r\n', b'*0\r\n'),
    ('xrange s ( +', b'-ERR Invalid stream ID specified as stream command argument\r\n', b'-ERR Invalid stream ID specified as stream command argument\r\n'),
    ('xrange s - + count 0', b'*-1\r\n', b'_\r\n'),
    ('xrange s - + count -1', b'*-1\r\n', b'_\r\n'),
    ('xrange s - + foo 1', b'-ERR syntax error\r\n', b'-ERR syntax error\r\n'),
    ('xrange nokey - +', b'*0\r\n', b'*0\r\n'),
    ('xadd s 18446744073709551615-18446744073709551615 a b', b'$41\r\n18446744073709551615-18446744073709551615\r\n', b'$41\r\n18446744073709551615-18446744073709551615\r\n'),
    ('xlen s', b':3\r\n', b':3\r\n'),
    ('xinfo stream s', b'*20\r\n$6\r\nlength\r\n:3\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$41\r\n18446744073709551615-18446744073709551615\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:6\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n5-1\r\n$6\r\ngroups\r\n:0\r\n$11\r\nfirst-entry\r\n*2\r\n$3\r\n5-1\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n$10\r\nlast-entry\r\n*2\r\n$41\r\n18446744073709551615-18446744073709551615\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n', b'%10\r\n$6\r\nlength\r\n:3\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$41\r\n18446744073709551615-18446744073709551615\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:6\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n5-1\r\n$6\r\ngroups\r\n:0\r\n$11\r\nfirst-entry\r\n*2\r\n$3\r\n5-1\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n$10\r\nlast-entry\r\n*2\r\n$41\r\n18446744073709551615-18446744073709551615\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n'),
    ('xsetid s 1-1', b'-ERR The ID specified in XSETID is smaller than the target stream top item\r\n', b'-ERR The ID specified in XSETID is smaller than the target stream top item\r\n'),
    ('xsetid s 18446744073709551615-18446744073709551615 entriesadded 1', b'-ERR The entries_added specified in XSETID is smaller than the target stream length\r\n', b'-ERR The entries_added specified in XSETID is smaller than the target stream length\r\n'),
    ('xsetid nokey 1-1', b'-ERR no such key\r\n', b'-ERR no such key\r\n'),
    ('xsetid s 1-1 maxdeletedid 2-2', b'-ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id\r\n', b'-ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id\r\n'),
    ('xsetid s 1-1 entriesadded -1', b'-ERR entries_added must be positive\r\n', b'-ERR entries_added must be positive\r\n'),
    ('xdel s 7-0 7-0 99', b':1\r\n', b':1\r\n'),
    ('xdel s bad', b'-ERR Invalid stream ID specified as stream command argument\r\n', b'-ERR Invalid stream ID specified as stream command argument\r\n'),
    ('xtrim s maxlen 0', b':2\r\n', b':2\r\n'),
    ('xtrim s', b"-ERR wrong number of arguments for 'xtrim' command\r\n", b"-ERR wrong number of arguments for 'xtrim' command\r\n"),
    ('xtrim s minid ~ 1 limit 10', b':0\r\n', b':0\r\n'),
    ('xtrim s maxlen = 1 limit 10', b'-ERR syntax error, LIMIT cannot be used without the special ~ option\r\n', b'-ERR syntax error, LIMIT cannot be used without the special ~ option\r\n'),
    ('set str x', b'+OK\r\n', b'+OK\r\n'),
    ('xlen str', b'-WRONGTYPE Operation against a key holding the wrong kind of value\r\n', b'-WRONGTYPE Operation against a key holding the wrong kind of value\r\n'),
    ('xrange str - +', b'-WRONGTYPE Operation against a key holding the wrong kind of value\r\n', b'-WRONGTYPE Operation against a key holding the wrong kind of value\r\n'),
    ('type s', b'+stream\r\n', b'+stream\r\n'),
    ('object encoding s', b'$6\r\nstream\r\n', b'$6\r\nstream\r\n'),
    ('del s', b':1\r\n', b':1\r\n'),
    ('xadd s 1-0 a 1', b'$3\r\n1-0\r\n', b'$3\r\n1-0\r\n'),
    ('xadd s 2-0 a 2', b'$3\r\n2-0\r\n', b'$3\r\n2-0\r\n'),
    ('xread streams s 0', b'*1\r\n*2\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n', b'%1\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n'),
    ('xread count 1 streams s 0-0', b'*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n', b'%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n'),
    ('xread streams s $', b'*-1\r\n', b'_\r\n'),
    ('xread streams s nokey 0 0', b'*1\r\n*2\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n', b'%1\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n'),
    ('xread streams s', b"-ERR wrong number of arguments for 'xread' command\r\n", b"-ERR wrong number of arguments for 'xread' command\r\n"),
    ('xread count x streams s 0', b'-ERR value is not an integer or out of range\r\n', b'-ERR value is not an integer or out of range\r\n'),
    ('xread group g c streams s 0', b'-ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.\r\n', b'-ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.\r\n'),
    ('xread noack streams s 0', b'-ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.\r\n', b'-ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.\r\n'),
    ('xread streams s >', b'-ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.\r\n', b'-ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.\r\n'),
    ('xread streams str 0', b'-WRONGTYPE Operation against a key holding the wrong kind of value\r\n', b'-WRONGTYPE Operation against a key holding the wrong kind of value\r\n'),
    ('xread block -1 streams s 0', b'-ERR timeout is negative\r\n', b'-ERR timeout is negative\r\n'),
    ('xread block x streams s 0', b'-ERR timeout is not an integer or out of range\r\n', b'-ERR timeout is not an integer or out of range\r\n'),
    ('xinfo stream nokey', b'-ERR no such key\r\n', b'-ERR no such key\r\n'),
    ('xinfo stream s foo', b"-ERR unknown subcommand or wrong number of arguments for 'stream'. Try XINFO HELP.\r\n", b"-ERR unknown subcommand or wrong number of arguments for 'stream'. Try XINFO HELP.\r\n"),
    ('xinfo foo s', b"-ERR unknown subcommand 'foo'. Try XINFO HELP.\r\n", b"-ERR unknown subcommand 'foo'. Try XINFO HELP.\r\n"),
    ('xinfo groups s', b'*0\r\n', b'*0\r\n'),
    ('xinfo help', b'*9\r\n+XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CONSUMERS <key> <groupname>\r\n+    Show consumers of <groupname>.\r\n+GROUPS <key>\r\n+    Show the stream consumer groups.\r\n+STREAM <key> [FULL [COUNT <count>]\r\n+    Show information about the stream.\r\n+HELP\r\n+    Prints this help.\r\n', b'*9\r\n+XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CONSUMERS <key> <groupname>\r\n+    Show consumers of <groupname>.\r\n+GROUPS <key>\r\n+    Show the stream consumer groups.\r\n+STREAM <key> [FULL [COUNT <count>]\r\n+    Show information about the stream.\r\n+HELP\r\n+    Prints this help.\r\n'),
    ('xgroup help', b"*17\r\n+XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CREATE <key> <groupname> <id|$> [option]\r\n+    Create a new consumer group. Options are:\r\n+    * MKSTREAM\r\n+      Create the empty stream if it does not exist.\r\n+    * ENTRIESREAD entries_read\r\n+      Set the group's entries_read counter (internal use).\r\n+CREATECONSUMER <key> <groupname> <consumer>\r\n+    Create a new consumer in the specified group.\r\n+DELCONSUMER <key> <groupname> <consumer>\r\n+    Remove the specified consumer.\r\n+DESTROY <key> <groupname>\r\n+    Remove the specified group.\r\n+SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]\r\n+    Set the current group ID and entries_read counter.\r\n+HELP\r\n+    Prints this help.\r\n", b"*17\r\n+XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+CREATE <key> <groupname> <id|$> [option]\r\n+    Create a new consumer group. Options are:\r\n+    * MKSTREAM\r\n+      Create the empty stream if it does not exist.\r\n+    * ENTRIESREAD entries_read\r\n+      Set the group's entries_read counter (internal use).\r\n+CREATECONSUMER <key> <groupname> <consumer>\r\n+    Create a new consumer in the specified group.\r\n+DELCONSUMER <key> <groupname> <consumer>\r\n+    Remove the specified consumer.\r\n+DESTROY <key> <groupname>\r\n+    Remove the specified group.\r\n+SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]\r\n+    Set the current group ID and entries_read counter.\r\n+HELP\r\n+    Prints this help.\r\n"),
    ('xinfo help x', b"-ERR wrong number of arguments for 'xinfo|help' command\r\n", b"-ERR wrong number of arguments for 'xinfo|help' command\r\n"),
    ('xgroup create s g $', b'+OK\r\n', b'+OK\r\n'),
    ('xgroup create s g $ mkstream', b'-BUSYGROUP Consumer Group name already exists\r\n', b'-BUSYGROUP Consumer Group name already exists\r\n'),
    ('xgroup create s g $ mkstream', b'-BUSYGROUP Consumer Group name already exists\r\n', b'-BUSYGROUP Consumer Group name already exists\r\n'),
    ('xgroup create s g2 0 mkstream entriesread 3', b'+OK\r\n', b'+OK\r\n'),
    ('xgroup create s g3 0 entriesread -2', b'-ERR value for ENTRIESREAD must be positive or -1\r\n', b'-ERR value for ENTRIESREAD must be positive or -1\r\n'),
    ('xgroup create s g3 0 foo', b"-ERR unknown subcommand or wrong number of arguments for 'create'. Try XGROUP HELP.\r\n", b"-ERR unknown subcommand or wrong number of arguments for 'create'. Try XGROUP HELP.\r\n"),
    ('xgroup create s g3 bad', b'-ERR Invalid stream ID specified as stream command argument\r\n', b'-ERR Invalid stream ID specified as stream command argument\r\n'),
    ('xgroup setid s nog 0', b"-NOGROUP No such consumer group 'nog' for key name 's'\r\n", b"-NOGROUP No such consumer group 'nog' for key name 's'\r\n"),
    ('xgroup setid s g 0 mkstream', b"-ERR unknown subcommand or wrong number of arguments for 'setid'. Try XGROUP HELP.\r\n", b"-ERR unknown subcommand or wrong number of arguments for 'setid'. Try XGROUP HELP.\r\n"),
    ('xgroup setid s g bad', b'-ERR Invalid stream ID specified as stream command argument\r\n', b'-ERR Invalid stream ID specified as stream command argument\r\n'),
    ('xgroup setid s g + entriesread 5', b'+OK\r\n', b'+OK\r\n'),
    ('xgroup setid s g 0', b'+OK\r\n', b'+OK\r\n'),
    ('xinfo groups s', b'*2\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n:2\r\n*12\r\n$4\r\nname\r\n$2\r\ng2\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:-1\r\n', b'*2\r\n%6\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n_\r\n$3\r\nlag\r\n:2\r\n%6\r\n$4\r\nname\r\n$2\r\ng2\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:-1\r\n'),
    ('xgroup createconsumer s g alice', b':1\r\n', b':1\r\n'),
    ('xgroup createconsumer s g alice', b':0\r\n', b':0\r\n'),
    ('xgroup createconsumer s nog alice', b"-NOGROUP No such consumer group 'nog' for key name 's'\r\n", b"-NOGROUP No such consumer group 'nog' for key name 's'\r\n"),
    ('xgroup createconsumer nokey g alice', b'-ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.\r\n', b'-ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.\r\n'),
    ('xgroup delconsumer s g bob', b':0\r\n', b':0\r\n'),
    ('xgroup destroy s g2', b':1\r\n', b':1\r\n'),
    ('xgroup destroy s g2', b':0\r\n', b':0\r\n'),
    ('xgroup destroy nokey g2', b'-ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.\r\n', b'-ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.\r\n'),
    ('xgroup foo s g', b"-ERR unknown subcommand 'foo'. Try XGROUP HELP.\r\n", b"-ERR unknown subcommand 'foo'. Try XGROUP HELP.\r\n"),
    ('xadd s 1-0 a 1', b'-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n', b'-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n'),
    ('xadd s 2-0 b 2', b'-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n', b'-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n'),
    ('xadd s 3-0 c 3', b'$3\r\n3-0\r\n', b'$3\r\n3-0\r\n'),
    ('xinfo groups s', b'*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n:3\r\n', b'*1\r\n%6\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n_\r\n$3\r\nlag\r\n:3\r\n'),
    ('xreadgroup group g alice streams s >', b'*1\r\n*2\r\n$1\r\ns\r\n*3\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n', b'%1\r\n$1\r\ns\r\n*3\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n'),
    ('xreadgroup group g bob count 1 streams s >', b'*-1\r\n', b'_\r\n'),
    ('xreadgroup group g bob streams s >', b'*-1\r\n', b'_\r\n'),
    ('xreadgroup group g alice streams s 0', b'*1\r\n*2\r\n$1\r\ns\r\n*3\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n', b'%1\r\n$1\r\ns\r\n*3\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n'),
    ('xreadgroup group g alice count 1 streams s 0', b'*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n', b'%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n'),
    ('xreadgroup group g alice streams s $', b'-ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.\r\n', b'-ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.\r\n'),
    ('xreadgroup group nog alice streams s >', b"-NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option\r\n", b"-NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option\r\n"),
    ('xreadgroup group g alice streams nokey >', b"-NOGROUP No such key 'nokey' or consumer group 'g' in XREADGROUP with GROUP option\r\n", b"-NOGROUP No such key 'nokey' or consumer group 'g' in XREADGROUP with GROUP option\r\n"),
    ('xreadgroup streams s >', b"-ERR wrong number of arguments for 'xreadgroup' command\r\n", b"-ERR wrong number of arguments for 'xreadgroup' command\r\n"),
    ('xreadgroup group g alice noack streams s >', b'*-1\r\n', b'_\r\n'),
    ('xinfo groups s', b'*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:3\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:0\r\n', b'*1\r\n%6\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:3\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:0\r\n'),
    ('xpending s g', b'*4\r\n:3\r\n$3\r\n1-0\r\n$3\r\n3-0\r\n*1\r\n*2\r\n$5\r\nalice\r\n$1\r\n3\r\n', b'*4\r\n:3\r\n$3\r\n1-0\r\n$3\r\n3-0\r\n*1\r\n*2\r\n$5\r\nalice\r\n$1\r\n3\r\n'),
    ('xpending s g foo', b'-ERR syntax error\r\n', b'-ERR syntax error\r\n'),
    ('xpending s nog', b"-NOGROUP No such key 's' or consumer group 'nog'\r\n", b"-NOGROUP No such key 's' or consumer group 'nog'\r\n"),
    ('xpending nokey g', b"-NOGROUP No such key 'nokey' or consumer group 'g'\r\n", b"-NOGROUP No such key 'nokey' or consumer group 'g'\r\n"),
    ('xdel s 1-0', b':1\r\n', b':1\r\n'),
    ('xreadgroup group g alice streams s 0', b'*1\r\n*2\r\n$1\r\ns\r\n*3\r\n*2\r\n$3\r\n1-0\r\n*-1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n', b'%1\r\n$1\r\ns\r\n*3\r\n*2\r\n$3\r\n1-0\r\n_\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n'),
    ('xack s g 1-0 2-0 9-9', b':2\r\n', b':2\r\n'),
    ('xack s g bad', b'-ERR Invalid stream ID specified as stream command argument\r\n', b'-ERR Invalid stream ID specified as stream command argument\r\n'),
    ('xack s nog 1-0', b':0\r\n', b':0\r\n'),
    ('xack nokey g 1-0', b':0\r\n', b':0\r\n'),
    ('xpending s g', b'*4\r\n:1\r\n$3\r\n3-0\r\n$3\r\n3-0\r\n*1\r\n*2\r\n$5\r\nalice\r\n$1\r\n1\r\n', b'*4\r\n:1\r\n$3\r\n3-0\r\n$3\r\n3-0\r\n*1\r\n*2\r\n$5\r\nalice\r\n$1\r\n1\r\n'),
    ('xclaim s g carol 0 3-0 justid', b'*1\r\n$3\r\n3-0\r\n', b'*1\r\n$3\r\n3-0\r\n'),
    ('xclaim s g carol 0 3-0 retrycount 5 justid', b'*1\r\n$3\r\n3-0\r\n', b'*1\r\n$3\r\n3-0\r\n'),
    ('xclaim s g carol 0 2-0 force justid', b'*1\r\n$3\r\n2-0\r\n', b'*1\r\n$3\r\n2-0\r\n'),
    ('xclaim s g carol 0 3-0 foo', b"-ERR Unrecognized XCLAIM option 'foo'\r\n", b"-ERR Unrecognized XCLAIM option 'foo'\r\n"),
    ('xclaim s g carol x 3-0', b'-ERR Invalid min-idle-time argument for XCLAIM\r\n', b'-ERR Invalid min-idle-time argument for XCLAIM\r\n'),
    ('xclaim s g carol 0 3-0 idle x', b'-ERR Invalid IDLE option argument for XCLAIM\r\n', b'-ERR Invalid IDLE option argument for XCLAIM\r\n'),
    ('xclaim s g carol 0 3-0 lastid bad', b'-ERR Invalid stream ID specified as stream command argument\r\n', b'-ERR Invalid stream ID specified as stream command argument\r\n'),
    ('xclaim s nog carol 0 3-0', b"-NOGROUP No such key 's' or consumer group 'nog'\r\n", b"-NOGROUP No such key 's' or consumer group 'nog'\r\n"),
    ('xpending s g', b'*4\r\n:2\r\n$3\r\n2-0\r\n$3\r\n3-0\r\n*1\r\n*2\r\n$5\r\ncarol\r\n$1\r\n2\r\n', b'*4\r\n:2\r\n$3\r\n2-0\r\n$3\r\n3-0\r\n*1\r\n*2\r\n$5\r\ncarol\r\n$1\r\n2\r\n'),
    ('xautoclaim s g dave 0 0-0 count 1 justid', b'*3\r\n$3\r\n3-0\r\n*1\r\n$3\r\n2-0\r\n*0\r\n', b'*3\r\n$3\r\n3-0\r\n*1\r\n$3\r\n2-0\r\n*0\r\n'),
    ('xautoclaim s g dave 0 0-0 count 0', b'-ERR COUNT must be > 0\r\n', b'-ERR COUNT must be > 0\r\n'),
    ('xautoclaim s g dave 0 0-0 count 576460752303423488', b'-ERR COUNT must be > 0\r\n', b'-ERR COUNT must be > 0\r\n'),
    ('xautoclaim s g dave 0 0-0 count 576460752303423487', b'-ERR Insufficient memory, failed allocating transient memory, COUNT too high.\r\n', b'-ERR Insufficient memory, failed allocating transient memory, COUNT too high.\r\n'),
    ('xautoclaim s g dave 0 ( count 5', b'-ERR Invalid stream ID specified as stream command argument\r\n', b'-ERR Invalid stream ID specified as stream command argument\r\n'),
    ('xautoclaim s g dave 0 0 foo', b'-ERR syntax error\r\n', b'-ERR syntax error\r\n'),
    ('xautoclaim s nog dave 0 0', b"-NOGROUP No such key 's' or consumer group 'nog'\r\n", b"-NOGROUP No such key 's' or consumer group 'nog'\r\n"),
    ('xautoclaim s g dave x 0', b'-ERR Invalid min-idle-time argument for XAUTOCLAIM\r\n', b'-ERR Invalid min-idle-time argument for XAUTOCLAIM\r\n'),
    ('xdel s 3-0', b':1\r\n', b':1\r\n'),
    ('xautoclaim s g dave 0 0-0', b'*3\r\n$3\r\n0-0\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n*1\r\n$3\r\n3-0\r\n', b'*3\r\n$3\r\n0-0\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n*1\r\n$3\r\n3-0\r\n'),
    ('xgroup delconsumer s g carol', b':0\r\n', b':0\r\n'),
    ('xinfo groups s', b'*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:2\r\n$7\r\npending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:0\r\n', b'*1\r\n%6\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:2\r\n$7\r\npending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:0\r\n'),
    ('xgroup create s g4 0', b'+OK\r\n', b'+OK\r\n'),
    ('xreadgroup group g4 z count 1 streams s >', b'*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n', b'%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n'),
    ('xinfo groups s', b'*2\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:2\r\n$7\r\npending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:0\r\n*12\r\n$4\r\nname\r\n$2\r\ng4\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n2-0\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n', b'*2\r\n%6\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:2\r\n$7\r\npending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:0\r\n%6\r\n$4\r\nname\r\n$2\r\ng4\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n2-0\r\n$12\r\nentries-read\r\n_\r\n$3\r\nlag\r\n_\r\n'),
]


def read_raw(conn):
    """One whole reply, as its bytes."""
    line = conn.read_line()
    kind, rest = line[:1], line[1:-2]
    if kind in (b"$", b"=") and int(rest) >= 0:
        return line + conn.read_exact(int(rest) + 2)
    if kind in (b"*", b"~", b">", b"%") and int(rest) >= 0:
        n = int(rest) * (2 if kind == b"%" else 1)
        return line + b"".join(read_raw(conn) for _ in range(n))
    return line


def call(conn, *args):
    conn.send(resp_encode(*args))
    return read_raw(conn)


@pytest.mark.parametrize("protocol", [2, 3])
def test_transcript(resp_port, protocol):
    with Conn(resp_port) as conn:
        call(conn, "FLUSHALL")
        if protocol == 3:
            call(conn, "HELLO", "3")
        for command, resp2, resp3 in TRANSCRIPT:
            want = resp2 if protocol == 2 else resp3
            assert call(conn, *shlex.split(command)) == want, command


def test_keyspace_events(resp_port):
    with Conn(resp_port) as conn, Conn(resp_port) as sub:
        call(conn, "FLUSHALL")
        call(conn, "CONFIG", "SET", "notify-keyspace-events", "KEt")
        try:
            call(sub, "SUBSCRIBE", "__keyevent@0__:xadd", "__keyevent@0__:xtrim",
                 "__keyevent@0__:xgroup-create", "__keyevent@0__:xdel")
            for _ in range(3):
                read_raw(sub)
            call(conn, "XADD", "ev", "MAXLEN", "1", "1-1", "a", "1")
            call(conn, "XADD", "ev", "MAXLEN", "1", "2-1", "a", "1")
            call(conn, "XGROUP", "CREATE", "ev", "g", "0")
            call(conn, "XDEL", "ev", "2-1")
            names = []
            for _ in range(4):
                message = read_raw(sub)
                names.append(message.split(b"\r\n")[4])
            assert names == [b"__keyevent@0__:xadd", b"__keyevent@0__:xadd",
                             b"__keyevent@0__:xtrim", b"__keyevent@0__:xgroup-create"]
            assert read_raw(sub).split(b"\r\n")[4] == b"__keyevent@0__:xdel"
        finally:
            call(conn, "CONFIG", "SET", "notify-keyspace-events", "")


def test_multi_and_scripts(resp_port):
    """RQ's XADD ... MAXLEN ~ inside MULTI, read back with XREVRANGE; BullMQ's XADD from
    a script; XREAD BLOCK refused from a script."""
    with Conn(resp_port) as conn:
        call(conn, "FLUSHALL")
        assert call(conn, "MULTI") == b"+OK\r\n"
        assert call(conn, "XADD", "q", "MAXLEN", "~", "10", "1-1", "a", "1") == b"+QUEUED\r\n"
        assert call(conn, "XREVRANGE", "q", "+", "-", "COUNT", "1") == b"+QUEUED\r\n"
        assert call(conn, "EXEC") == (b"*2\r\n$3\r\n1-1\r\n*1\r\n*2\r\n$3\r\n1-1\r\n"
                                      b"*2\r\n$1\r\na\r\n$1\r\n1\r\n")
        script = "return redis.call('XADD', KEYS[1], '2-1', 'b', ARGV[1])"
        assert call(conn, "EVAL", script, "1", "q", "x") == b"$3\r\n2-1\r\n"
        assert call(conn, "XLEN", "q") == b":2\r\n"
        blocked = "return redis.call('XREAD', 'BLOCK', '0', 'STREAMS', KEYS[1], '$')"
        reply = call(conn, "EVAL", blocked, "1", "q")
        assert b"XREAD command is not allowed with BLOCK option from scripts" in reply
