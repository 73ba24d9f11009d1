import assert from "node:assert/strict";
import { parseQgroup } from "./btrfs.ts";

// `btrfs qgroup show --raw -re` (btrfs-progs 6.2) after 100 MiB written, a read-only Snapshot, then 30 MiB in a new
// file and 20 MiB overwritten: the incremental send from that Snapshot was 52462301 bytes, the exclusive 52445184.
const SHOWN = `qgroupid         rfer         excl     max_rfer     max_excl path
--------         ----         ----     --------     -------- ----
0/5             16384        16384         none         none <toplevel>
0/256       157302784     52445184   3221225472         none v
0/257       104873984     20987904         none         none s1
`;

Deno.test("a qgroup line gives referenced bytes, the limit, and the exclusive bytes as changed since the Snapshot", () => {
  assert.deepEqual(parseQgroup(SHOWN, 256), {
    usedBytes: 157302784,
    sizeBytes: 3221225472,
    changedBytes: 52445184,
  });
  assert.deepEqual(parseQgroup(SHOWN, 257), {
    usedBytes: 104873984,
    sizeBytes: undefined,
    changedBytes: 20987904,
  });
  assert.equal(parseQgroup(SHOWN, 258), undefined);
  assert.equal(parseQgroup("0/256 x y none none v", 256), undefined);
});
