// The replicated store's trust boundary, end to end on a real 2-Machine lab (real ployzd, wireguard-go, dockerd,
// SQLite stores): a plain container on m2 reaches no Machine's store sync or Machine RPC and learns nothing (not the
// Cluster id); m2 itself, a mesh peer, pushing rows that claim m1's site (unsigned, signed by another key) or come
// from a Machine nobody admitted is refused and counted; and a Machine the operator admitted pushing each kind of
// malformed row (bad subnet, overlapping subnet, duplicate key, a clock far ahead…) leaves both daemons up,
// peering and replicating.
import assert from "node:assert/strict";
import { join } from "node:path";
import { connectMachine } from "../lib/rpc/mod.ts";
import { type Change, changeMessage, ChangeSigner, generateSigningSecret } from "../lib/store/mod.ts";
import { IMAGE } from "./support/docker.ts";
import { onPloyzNetwork, startLab } from "./support/lab.ts";
import { readRows } from "./support/lab_store.ts";
import { needs } from "./support/needs.ts";
import { eventually } from "./support/poll.ts";

interface Listed {
  machines: {
    id: string;
    name: string;
    subnet?: string;
    membership: string;
    "public_key"?: string;
    "signing_key"?: string;
    "refused_changes"?: number;
  }[];
}

interface PushReply {
  applied: number;
  duplicates: number;
  rejected: { index: number; reason: string }[];
}

function gateway(subnet: string): string {
  return subnet.replace(/\.0\/24$/, ".1");
}

function hlcNow(): string {
  return Date.now().toString(16).padStart(12, "0") + "000000";
}

/** A Machine key of the test's own, signing changes as a Machine does. */
function signer(clusterId: string): { publicKey: string; sign(change: Change): Promise<Change> } {
  const key = new ChangeSigner(generateSigningSecret());
  return {
    publicKey: key.publicKey,
    async sign(change: Change): Promise<Change> {
      return { ...change, sig: await key.sign(changeMessage(clusterId, change)) };
    },
  };
}

function machineRow(id: string, version: number, body: Record<string, unknown>, hlc = hlcNow()): Change {
  return {
    site: id,
    version,
    table: "machines",
    key: id,
    hlc,
    owner: id,
    deleted: false,
    body: JSON.stringify({ id, name: id, ...body }),
  };
}

Deno.test(needs(["lab"], {
  name:
    "lab: store sync admits only mesh peers, forged rows are refused, malformed rows leave every daemon up",
  async fn(t) {
    await using lab = await startLab("trust", 2);
    const db = (m: string): string => join(lab.dir, m, "ployz", "store.db");
    const ls = async (m: string): Promise<Listed> =>
      JSON.parse((await lab.on(m, ["machine", "ls", "--json"])).stdout);
    const listed = await eventually(60_000, "m1 and m2 see each other up", async () => {
      const [one, two] = [await ls("m1"), await ls("m2")];
      const up = (l: Listed): boolean =>
        l.machines.length === 2 && l.machines.every((m) => m.membership === "up");
      return up(one) && up(two) ? one : undefined;
    });
    const m1 = listed.machines.find((m) => m.name === "m1")!;
    const m2 = listed.machines.find((m) => m.name === "m2")!;
    assert.match(m1.signing_key ?? "", /^[A-Za-z0-9+/]{43}=$/, "the Machine row carries its signing key");
    const clusterId =
      JSON.parse(await Deno.readTextFile(join(lab.dir, "m1", "ployz", "machine.json"))).cluster_id;
    assert.equal(typeof clusterId, "string");
    const gateways = [gateway(m1.subnet!), gateway(m2.subnet!)];

    /** POSTs a push to m1's store sync from m2's namespace: from m2's own gateway address, a mesh peer. */
    const pushFromM2 = async (changes: Change[]): Promise<PushReply> => {
      const file = join(lab.dir, `push-${crypto.randomUUID()}.json`);
      await Deno.writeTextFile(file, JSON.stringify({ site: m2.id, changes }));
      const result = await lab.ployz([
        "lab",
        "exec",
        "m2",
        "--dir",
        lab.dir,
        "--",
        "curl",
        "-sS",
        "--max-time",
        "10",
        "-H",
        `x-ployz-cluster-id: ${clusterId}`,
        "-H",
        "content-type: application/json",
        "--data-binary",
        `@${file}`,
        `http://${gateways[0]}:51000/store/v1/push`,
      ]);
      assert.equal(result.code, 0, result.stderr);
      return JSON.parse(result.stdout);
    };

    await t.step(
      "a container on m2 reaches no Machine's store sync or Machine RPC and learns nothing",
      async () => {
        const probes = gateways.flatMap((g) =>
          ["/store/v1/vector", "/rpc/ployz.machine.status.v1"].map((path) =>
            `echo "== ${g}${path}"; wget -T 5 -q -O- --header 'x-ployz-cluster-id: guess' http://${g}:51000${path} 2>&1; echo "rc=$?"`
          )
        );
        const result = await lab.docker("m2", onPloyzNetwork(probes.join("; ")));
        assert.equal(result.code, 0, result.stderr);
        const answers = result.stdout.split("== ").filter((s) => s.trim() !== "");
        assert.equal(answers.length, 4, result.stdout);
        for (const answer of answers) {
          assert.doesNotMatch(answer, /rc=0/, `reached: ${answer}`);
          assert.ok(!answer.includes(clusterId), `the Cluster id leaked: ${answer}`);
        }
      },
    );

    await t.step(
      "m2 pushing rows that claim m1's site, or from a Machine nobody admitted, is refused",
      async () => {
        const before = readRows(db("m1"), "machines").get(m1.id);
        const claim = machineRow(m1.id, 1_000_000, {
          "public_key": m1.public_key,
          subnet: m1.subnet,
          endpoints: ["203.0.113.66:51820"],
        });
        const stranger = signer(clusterId);
        const outsiderId = "zz-outsider";
        const reply = await pushFromM2([
          claim,
          await stranger.sign({ ...claim, version: 1_000_001 }),
          await stranger.sign(machineRow(outsiderId, 1, { subnet: "10.210.77.0/24" })),
        ]);
        assert.equal(reply.applied, 0, JSON.stringify(reply));
        assert.deepEqual(reply.rejected.map((r) => r.reason.replace(/^Refused change [^:]+:\d+: /, "")), [
          "it is not signed",
          "its signature does not match",
          `Machine "${outsiderId}" is not admitted here`,
        ]);
        assert.deepEqual(readRows(db("m1"), "machines").get(m1.id), before);
        assert.equal(readRows(db("m1"), "machines").get(outsiderId), undefined);
        // Each refusal is counted and each reason logged once on the receiving Machine.
        const log = await Deno.readTextFile(join(lab.dir, "m1", "ployzd.log"));
        assert.match(
          log,
          /store: refused a change from Machine "\w+": Refused change \w+:1000000: it is not signed/,
        );
        assert.match(log, new RegExp(`Machine "${outsiderId}" is not admitted here \\(\\d+ so far\\)`));
        // ...and shown per delivering Machine where the operator looks.
        const seen = (await ls("m1")).machines.find((m) => m.id === m2.id);
        assert.equal(seen?.refused_changes, 3, JSON.stringify(seen));
        const table = (await lab.on("m1", ["machine", "ls"])).stdout;
        assert.match(table, /REFUSED/);
        assert.match(table, new RegExp(`^m2 +${m2.id} .* 3 +`, "m"), table);
      },
    );

    await t.step(
      "each kind of malformed row from an admitted Machine leaves both daemons up and peering",
      async () => {
        const rogue = signer(clusterId);
        const rogueId = "zz-rogue";
        const wgKey = crypto.getRandomValues(new Uint8Array(32)).toBase64();
        // The operator's join admits it (this is what `machine add` asks of the Entry Machine).
        using client = connectMachine({ socketPath: join(lab.dir, "m1", "run", "ployz.sock"), label: "m1" });
        await client.admitPeer({
          "machine_id": rogueId,
          "public_key": wgKey,
          subnet: "10.210.9.0/24",
          "signing_key": rogue.publicKey,
        });
        let version = 0;
        const row = async (body: Record<string, unknown>, hlc?: string): Promise<Change> =>
          await rogue.sign(machineRow(rogueId, ++version, body, hlc));
        // Rows the store takes (their shape is right) but no consumer can use.
        const unusable = [
          { "public_key": wgKey, subnet: "10.99.0.0/24" }, // outside the Cluster network
          { "public_key": wgKey, subnet: m1.subnet }, // m1's own subnet
          { "public_key": wgKey, subnet: m2.subnet }, // m2's subnet
          { "public_key": wgKey, subnet: "10.210.0.0/16" }, // not a /24
          { "public_key": wgKey, subnet: "300.1.1.0/24" }, // not an address
          { "public_key": m2.public_key, subnet: "10.210.9.0/24" }, // m2's WireGuard key
          { subnet: "10.210.9.0/24" }, // no key
        ];
        for (const body of unusable) {
          const reply = await pushFromM2([await row(body)]);
          assert.equal(reply.applied, 1, `${JSON.stringify(body)}: ${JSON.stringify(reply)}`);
        }
        // Rows refused on write: malformed fields, and a clock an hour ahead that would poison every HLC.
        const refused = [
          await row({ "public_key": "not a key", subnet: "10.210.9.0/24" }),
          await row({ "public_key": wgKey, subnet: "x" }),
          await row({ "public_key": wgKey, subnet: "10.210.9.0/24", endpoints: ["no port"] }),
          await row({ "public_key": wgKey, subnet: "10.210.9.0/24" }, "ffffffffffffffffff"),
          await row(
            { "public_key": wgKey, subnet: "10.210.9.0/24" },
            (Date.now() + 3_600_000).toString(16).padStart(12, "0") + "000000",
          ),
        ];
        const reply = await pushFromM2(refused);
        assert.equal(reply.applied, 0, JSON.stringify(reply));
        assert.equal(reply.rejected.length, refused.length, JSON.stringify(reply));
        // The unusable rows reached m2 too (relayed or pulled), each reported, never thrown on.
        await eventually(30_000, "m2 holds the rogue's last row", async () => {
          await Promise.resolve();
          const held = readRows(db("m2"), "machines").get(rogueId);
          return held !== undefined && held.public_key === undefined ? true : undefined;
        });
        await eventually(30_000, "m1 and m2 still see each other up, every daemon answering", async () => {
          const [one, two] = [await ls("m1"), await ls("m2")];
          const up = (l: Listed, other: string): boolean =>
            l.machines.some((m) => m.id === other && m.membership === "up");
          return up(one, m2.id) && up(two, m1.id) ? true : undefined;
        });
        const log = await Deno.readTextFile(join(lab.dir, "m1", "ployzd.log"));
        assert.match(log, /skipping Machine "zz-rogue" as a peer: its subnet 10\.99\.0\.0\/24 lies outside/);
        assert.doesNotMatch(log, /Unhandled|uncaught/i);
        // Replication still runs both ways after the poisoned clock was offered: a fresh write on m1 reaches m2 with
        // an 18-digit HLC.
        const marker = `trust-${crypto.randomUUID().slice(0, 8)}`;
        const ran = await lab.docker("m1", [
          "run",
          "-d",
          "--name",
          marker,
          "--network",
          "ployz",
          "--label",
          "ployz.managed=1",
          "--label",
          `ployz.machine=${m1.id}`,
          "--label",
          "ployz.project=trust",
          "--label",
          `ployz.service=${marker}`,
          IMAGE,
          "sleep",
          "600",
        ]);
        assert.equal(ran.code, 0, ran.stderr);
        await eventually(30_000, "m1's new container row reaches m2", async () => {
          await Promise.resolve();
          const names = [...readRows(db("m2"), "containers").values()].map((r) => r.name);
          return names.includes(marker) ? true : undefined;
        });
      },
    );
  },
}));
