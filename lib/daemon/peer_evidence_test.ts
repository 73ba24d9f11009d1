import assert from "node:assert/strict";
import { PeerTraffic, RefusalLog } from "./peer_evidence.ts";

Deno.test("refusals: counted per delivering Machine, each distinct reason logged once, both bounded", () => {
  const lines: string[] = [];
  const log = new RefusalLog((line) => lines.push(line));
  const forged = { index: 0, reason: "Refused change site-a:7: bad signature" };
  log.note('Machine "a"', [forged, { index: 1, reason: "Refused change site-a:8: bad signature" }], "m-a");
  log.note('Machine "b"', [{ index: 0, reason: "unadmitted site" }], undefined);
  assert.equal(log.count, 3);
  assert.deepEqual([...log.byMachine()], [["m-a", 2]]);
  assert.equal(lines.length, 2, "the same reason from two changes is logged once");
  assert.match(
    lines[0],
    /refused a change from Machine "a": Refused change site-a:7: bad signature \(2 so far\)/,
  );
  for (let i = 0; i < 5000; i++) log.note("x", [{ index: 0, reason: `reason ${i}` }], `m-${i}`);
  assert.equal(log.count, 5003);
  assert.equal(log.byMachine().size, 4096, "per-Machine counts stay bounded");
  assert.equal(lines.length, 256, "distinct reasons logged stay bounded");
});

Deno.test("traffic: bytes that grew mark a peer heard; an address marks the Machine whose subnet holds it", () => {
  const t = new PeerTraffic();
  t.noteReceived([{ publicKey: "k1", rxBytes: 10 } as never], 1);
  assert.equal(t.received().size, 0, "a first reading is only a baseline");
  t.noteReceived([{ publicKey: "k1", rxBytes: 20 } as never], 2);
  assert.deepEqual([...t.received()], [["k1", 2]]);
  let asked = 0;
  const peers = (): { machineId: string; subnet: string }[] => {
    asked++;
    return [{ machineId: "m2", subnet: "10.210.2.0/24" }, { machineId: "bad", subnet: "nonsense" }];
  };
  t.noteAddress("not-an-address", peers, 3);
  assert.equal(asked, 0, "peers are not read for an address that is not IPv4");
  t.noteAddress("10.210.2.1", peers, 4);
  assert.deepEqual([...t.traffic()], [["m2", 4]]);
});
