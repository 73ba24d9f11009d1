import assert from "node:assert/strict";
import { join } from "node:path";
import type { CopyWire, MachineClient, SetVolumeCopyRequest } from "../rpc/mod.ts";
import { RpcError } from "../rpc/mod.ts";
import { type ConfigStore, openConfigStore } from "../store/mod.ts";
import { type Copy, copyAfter, decideCopy, floorAfter } from "../volume/mod.ts";
import { runVolume, type VolumeRunHost, type VolumeRunMachine } from "./volume_run.ts";

// Machines that apply the real transition table to an in-memory copy, answering `busy` once per step.
let failOn: ((req: SetVolumeCopyRequest) => boolean) | undefined;

interface MachineState {
  copy: Copy;
  floor: number;
  down?: boolean;
  freeBytes?: number;
  usedBytes?: number;
  changedBytes?: number;
  /** A transition an earlier run started: answers `busy` to `asks` more requests, then leaves the copy `then`. */
  foreign?: { asks: number; then: Copy };
}

function fakeMachine(
  name: string,
  start: Copy,
): VolumeRunMachine & {
  state: MachineState;
  asked: SetVolumeCopyRequest[];
} {
  const state: MachineState = {
    copy: start,
    floor: 0,
  };
  const unreachable = () => Promise.reject(new RpcError("unavailable", `Cannot reach Machine "${name}"`));
  const asked: SetVolumeCopyRequest[] = [];
  let pending: string | undefined;
  const wire = (c: Copy): CopyWire =>
    c.role === "mirror"
      ? { role: "mirror", snapshot: c.snapshot }
      : c.role === "writer"
      ? { role: "writer", epoch: c.epoch }
      : { role: "none" };
  const client = {
    volumeContainers: () => state.down ? unreachable() : Promise.resolve({ containers: [] }),
    removeContainer: () => Promise.resolve({ id: "x", removed: true }),
    machinePool: () =>
      state.down ? unreachable() : Promise.resolve({
        "machine_id": name,
        "machine_name": name,
        pool: {
          kind: "btrfs",
          where: "/p",
          ...(state.freeBytes === undefined ? {} : { "free_bytes": state.freeBytes }),
        },
        volumes: state.copy.role === "none" ? [] : [{
          name: "v",
          role: state.copy.role,
          ...(state.copy.role === "mirror" ? { snapshot: state.copy.snapshot } : { epoch: state.copy.epoch }),
          snapshots: [],
          "size_bytes": 2 ** 30,
          ...(state.usedBytes === undefined ? {} : { "used_bytes": state.usedBytes }),
          ...(state.changedBytes === undefined ? {} : { "changed_bytes": state.changedBytes }),
        }],
      }),
    setVolumeCopy(req: SetVolumeCopyRequest) {
      if (state.down) return unreachable();
      asked.push(req);
      if (failOn?.(req)) return Promise.reject(new RpcError("unavailable", "the link to the source broke"));
      if (state.foreign !== undefined) {
        if (state.foreign.asks-- > 0) {
          return Promise.reject(
            new RpcError("busy", `Another transition of Volume "v" runs on Machine "${name}"`),
          );
        }
        state.copy = state.foreign.then;
        state.foreign = undefined;
      }
      const toCopy = (w: CopyWire): Copy =>
        w.role === "mirror"
          ? { role: "mirror", snapshot: w.snapshot! }
          : w.role === "writer"
          ? { role: "writer", epoch: w.epoch ?? 0 }
          : { role: "none" };
      const key = JSON.stringify(req);
      const d = decideCopy(state.copy, state.floor, {
        expected: toCopy(req.expected),
        wanted: toCopy(req.wanted),
        gen: req.gen,
      });
      if (d.kind === "refused") {
        return Promise.reject(
          new RpcError("conflict", d.message, { details: { reason: d.reason, copy: wire(state.copy) } }),
        );
      }
      state.floor = floorAfter(state.floor, req.gen, d);
      if (d.kind === "step") {
        if (pending !== key) {
          pending = key;
          return Promise.resolve({
            "machine_id": name,
            volume: "v",
            outcome: "busy" as const,
            copy: wire(state.copy),
            floor: state.floor,
          });
        }
        pending = undefined;
        state.copy = copyAfter(d.step);
      }
      return Promise.resolve({
        "machine_id": name,
        volume: "v",
        outcome: d.kind === "step" ? "done" as const : "at_want" as const,
        copy: wire(state.copy),
        floor: state.floor,
      });
    },
  } as unknown as MachineClient;
  return { id: name, name, client, state, asked };
}

/** Runs `body` with a host of `machines` over a fresh Config Store, which is closed and removed afterwards. */
async function withHost(
  machines: VolumeRunMachine[],
  body: (host: VolumeRunHost, store: ConfigStore, lines: string[]) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  const store = openConfigStore(join(dir, "config.db"));
  const lines: string[] = [];
  try {
    await body(
      {
        machines: () => Promise.resolve({ machines, unreachable: [] }),
        store,
        progress: (l: string) => lines.push(l),
        busyPauseMs: 1,
      },
      store,
      lines,
    );
  } finally {
    failOn = undefined;
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("mirror then sync: each run fences every Machine at its gen, asks again while busy, ends done", async () => {
  const m1 = fakeMachine("m1", { role: "writer", epoch: 0 });
  const m2 = fakeMachine("m2", { role: "none" });
  const m3 = fakeMachine("m3", { role: "none" });
  await withHost([m1, m2, m3], async (host, store, lines) => {
    const mirrored = await runVolume(host, "v", { kind: "mirror", to: "m2" });
    assert.equal(mirrored.state, "done", JSON.stringify(mirrored.error));
    assert.equal(mirrored.run.gen, 1);
    assert.equal(m2.state.copy.role, "mirror");
    assert.deepEqual([m1.state.floor, m2.state.floor, m3.state.floor], [1, 1, 1], "every Machine fenced");
    // The receive names its source and the Writer's size.
    const receive = m2.asked.find((r) => r.wanted.role === "mirror")!;
    assert.equal(receive.source_machine_id, "m1");
    assert.equal(receive.size_bytes, 2 ** 30);
    const synced = await runVolume(host, "v", { kind: "sync" });
    assert.equal(synced.state, "done");
    assert.equal(synced.run.gen, 2);
    assert.match((m2.state.copy as { snapshot: string }).snapshot, /^g2-/);
    assert.equal(store.volumeRun("v")?.state, "done");
    assert.match(store.volumeRun("v")!.evidence, /m2 Mirror@g2-/);
    assert.match(lines.join("\n"), /m2: none → Mirror@g1-/);
  });
});

Deno.test("one open run per Volume: another is refused naming it, the same resumes with its gen", async () => {
  const m1 = fakeMachine("m1", { role: "writer", epoch: 0 });
  const m2 = fakeMachine("m2", { role: "none" });
  await withHost([m1, m2], async (host, store) => {
    // An operator died during a mirror run of gen 1: the run stays open.
    store.openVolumeRun("v", "mirror", JSON.stringify({ to: "m2" }), "t0");
    assert.throws(
      () => store.openVolumeRun("v", "sync", "{}", "t1"),
      (e: Error & { code: string }) => e.code === "conflict" && /open mirror run \(gen 1/.test(e.message),
    );
    await assert.rejects(
      runVolume(host, "v", { kind: "sync" }),
      (e: Error & { code: string }) => e.code === "conflict",
    );
    const resumed = await runVolume(host, "v", { kind: "mirror", to: "m2" });
    assert.equal(resumed.resumed, true);
    assert.equal(resumed.run.gen, 1);
    assert.equal(resumed.state, "done");
    // A late request of gen 1 after a gen 2 run touched m2 is refused by its floor.
    await runVolume(host, "v", { kind: "sync" });
    await assert.rejects(
      m2.client.setVolumeCopy({
        volume: "v",
        expected: m2.state.copy as CopyWire,
        wanted: { role: "none" },
        gen: 1,
      }),
      (e: RpcError) => /below this Volume's floor 2/.test(e.message),
    );
  });
});

Deno.test("bad inputs: unknown Volume, release without the exact name, rm-mirror of the Writer", async () => {
  const m1 = fakeMachine("m1", { role: "writer", epoch: 0 });
  await withHost([m1], async (host, store) => {
    await assert.rejects(
      runVolume(host, "nosuch", { kind: "sync" }),
      (e: Error & { code: string }) => e.code === "not_found",
    );
    await assert.rejects(
      runVolume(host, "v", { kind: "release", confirm: "w" }),
      (e: Error & { code: string }) => e.code === "invalid_argument" && e.message.includes("--confirm v"),
    );
    assert.equal(store.volumeRun("v"), undefined, "a refused request opens no run");
    const wrong = await runVolume(host, "v", { kind: "rm-mirror", on: "m1" });
    assert.equal(wrong.state, "failed");
    assert.match(wrong.error!.message, /holds the Writer/);
    assert.equal(m1.state.copy.role, "writer");
    const released = await runVolume(host, "v", { kind: "release", confirm: "v" });
    assert.equal(released.state, "done");
    assert.equal(m1.state.copy.role, "none");
  });
});

Deno.test("move: mirror, sync, cut, final sync, Writer on the target; killed after the cut, the re-run finishes", async () => {
  const m1 = fakeMachine("m1", { role: "writer", epoch: 0 });
  const m2 = fakeMachine("m2", { role: "none" });
  await withHost([m1, m2], async (host, store) => {
    const moved = await runVolume(host, "v", { kind: "move", to: "m2" });
    assert.equal(moved.state, "done", JSON.stringify(moved.error));
    assert.deepEqual([m1.state.copy, m2.state.copy.role], [{ role: "mirror", snapshot: "g1-cut" }, "writer"]);
    assert.equal(typeof moved.figures?.unavailableMs, "number");
    // Back to m1, the operator dies right after the cut (the checkpoint throws past the run): the run stays open.
    class Killed extends Error {}
    await assert.rejects(
      runVolume(
        {
          ...host,
          checkpoint: (p: string) => {
            if (p === "cut") throw new Killed();
          },
        },
        "v",
        { kind: "move", to: "m1" },
      ),
      Killed,
    );
    assert.equal(store.volumeRun("v")?.state, "open", "a killed run stays open");
    assert.equal(m2.state.copy.role, "mirror");
    assert.notEqual(m1.state.copy.role, "writer");
    const again = await runVolume(host, "v", { kind: "move", to: "m1" });
    assert.equal(again.state, "done", JSON.stringify(again.error));
    assert.equal(again.run.gen, 2);
    assert.equal(again.resumed, true);
    assert.deepEqual([m1.state.copy.role, m2.state.copy], ["writer", { role: "mirror", snapshot: "g2-cut" }]);
  });
});

Deno.test("move: a failure between the cut and Writer{start} undoes: the source is the Writer again", async () => {
  const m1 = fakeMachine("m1", { role: "writer", epoch: 0 });
  const m2 = fakeMachine("m2", { role: "none" });
  failOn = (req) =>
    req.wanted.role === "mirror" && req.wanted.snapshot === "g1-cut" && req.source_machine_id === "m1";
  await withHost([m1, m2], async (host) => {
    const result = await runVolume(host, "v", { kind: "move", to: "m2" });
    assert.equal(result.state, "failed");
    assert.match(result.error!.message, /undone: "m1" is the Writer again/);
    assert.equal(m1.state.copy.role, "writer");
    assert.equal(m2.state.copy.role, "mirror");
  });
});

Deno.test("move into a Pool too small: refused before any step, naming both Machines and sizes", async () => {
  const m1 = fakeMachine("m1", { role: "writer", epoch: 0 });
  const m2 = fakeMachine("m2", { role: "none" });
  m1.state.usedBytes = 300 * 2 ** 20;
  m2.state.freeBytes = 100 * 2 ** 20;
  await withHost([m1, m2], async (host, store) => {
    const result = await runVolume(host, "v", { kind: "move", to: "m2" });
    assert.equal(result.state, "failed");
    assert.equal(result.error?.code, "unavailable");
    assert.equal(
      result.error?.message,
      `Machine "m2" has 104857600 bytes free in its Pool and "v" uses 314572800 bytes on "m1": too little to receive it (nothing changed; "m1" still holds the Writer)`,
    );
    assert.deepEqual([m1.state.copy, m2.state.copy], [{ role: "writer", epoch: 0 }, { role: "none" }]);
    assert.deepEqual(m2.asked.map((r) => r.wanted.role), ["none"], "only the fence reached m2");
    assert.equal(store.volumeRun("v")?.state, "failed");
  });
});

Deno.test("move whose source is cut off after the cut: stops with the stage and what to do, then finishes", async () => {
  const m1 = fakeMachine("m1", { role: "writer", epoch: 0 });
  const m2 = fakeMachine("m2", { role: "none" });
  await withHost([m1, m2], async (host) => {
    // In the run: the source goes away right after the cut; the final incremental and the undo both fail.
    const cutOff = await runVolume(
      {
        ...host,
        checkpoint: (p: string) => {
          if (p === "cut") m1.state.down = true;
        },
      },
      "v",
      { kind: "move", to: "m2" },
    );
    assert.equal(cutOff.state, "failed");
    assert.match(
      cutOff.error!.message,
      /the undo on "m1" failed too \(Cannot reach Machine "m1"\)\. Stopped after the cut: the Volume has no Writer, its data is safe in the cut Snapshot g1-cut on "m1"; run "ployz volume move v --to m2" again once "m1" answers/,
    );
    assert.equal(m2.state.copy.role, "mirror", "the target stays a Mirror");
    assert.deepEqual(m1.state.copy, { role: "mirror", snapshot: "g1-cut" });

    // A re-run while the source is still away: nothing changes, and it says why.
    const away = await runVolume(host, "v", { kind: "move", to: "m2" });
    assert.equal(away.state, "failed");
    assert.match(
      away.error!.message,
      /no Writer among the Machines that answered.*"m1" did not answer \(Cannot reach Machine "m1"\)\. If a Move was cut there, its data is safe/,
    );
    assert.equal(m2.state.copy.role, "mirror");

    // Once it answers, the Move finishes from its cut Snapshot.
    m1.state.down = false;
    const done = await runVolume(host, "v", { kind: "move", to: "m2" });
    assert.equal(done.state, "done", JSON.stringify(done.error));
    assert.deepEqual([m1.state.copy, m2.state.copy.role], [{ role: "mirror", snapshot: "g1-cut" }, "writer"]);
  });
});

Deno.test("a run started right after a killed run's receive waits for it and fences at the copy it left", async () => {
  const m1 = fakeMachine("m1", { role: "writer", epoch: 0 });
  // m2 shows none while the killed run's receive runs there (a half-received Snapshot is not a copy yet).
  const m2 = fakeMachine("m2", { role: "none" });
  m2.state.foreign = { asks: 3, then: { role: "mirror", snapshot: "g1-a" } };
  await withHost([m1, m2], async (host, store, lines) => {
    store.openVolumeRun("v", "move", "{}", new Date().toISOString());
    store.closeVolumeRun("v", 1, "cancelled", "cancelled by the operator", new Date().toISOString());
    const result = await runVolume(host, "v", { kind: "mirror", to: "m2" });
    assert.equal(result.state, "done", JSON.stringify(result.error));
    assert.equal(result.run.gen, 2);
    assert.deepEqual(m2.state.copy, { role: "mirror", snapshot: "g1-a" });
    assert.equal(m2.state.floor, 2, "m2 fenced at the new run's gen");
    // No receive was asked beside the earlier one: the Mirror it left is kept (a sync brings it up to date).
    assert.equal(m2.asked.filter((r) => r.wanted.role === "mirror" && r.expected.role === "none").length, 0);
    assert.match(lines.join("\n"), /m2: none → Mirror@g1-a by an earlier run's transition; fencing at that/);
  });
});

Deno.test("sync into a Mirror whose Pool is smaller than what the Writer wrote since: refused before any step", async () => {
  const m1 = fakeMachine("m1", { role: "writer", epoch: 0 });
  const m2 = fakeMachine("m2", { role: "mirror", snapshot: "g1-a" });
  const m3 = fakeMachine("m3", { role: "mirror", snapshot: "g1-a" });
  m1.state.changedBytes = 300 * 2 ** 20;
  m2.state.freeBytes = 2 ** 30;
  m3.state.freeBytes = 100 * 2 ** 20;
  await withHost([m1, m2, m3], async (host) => {
    const result = await runVolume(host, "v", { kind: "sync" });
    assert.equal(result.state, "failed");
    assert.equal(result.error?.code, "unavailable");
    assert.equal(
      result.error?.message,
      `Machine "m3" has 104857600 bytes free in its Pool and "v" has 314572800 bytes written on "m1" since its newest Snapshot: too little to receive the incremental send (nothing changed; "m1" still holds the Writer)`,
    );
    // Neither Mirror was asked to receive: m2 had room, but the run refuses before its first step.
    for (const m of [m2, m3]) {
      assert.deepEqual(m.asked.map((r) => r.wanted.role), ["mirror"], "only the fence");
    }
    assert.deepEqual([m2.state.copy, m3.state.copy], [
      { role: "mirror", snapshot: "g1-a" },
      { role: "mirror", snapshot: "g1-a" },
    ]);
    // With room on both, the same sync runs.
    m3.state.freeBytes = 2 ** 30;
    const again = await runVolume(host, "v", { kind: "sync" });
    assert.equal(again.state, "done", JSON.stringify(again.error));
  });
});

Deno.test("move: a final incremental too large for the target is refused before the cut", async () => {
  const m1 = fakeMachine("m1", { role: "writer", epoch: 0 });
  const m2 = fakeMachine("m2", { role: "mirror", snapshot: "g1-a" });
  m1.state.changedBytes = 10 * 2 ** 20;
  m2.state.freeBytes = 100 * 2 ** 20;
  // While the sync runs the Writer goes on writing: 200 MiB more by the time the cut would be asked.
  failOn = (req) => {
    if (req.wanted.role === "mirror" && req.wanted.snapshot?.endsWith("s")) {
      m1.state.changedBytes = 200 * 2 ** 20;
    }
    return false;
  };
  await withHost([m1, m2], async (host) => {
    const result = await runVolume(host, "v", { kind: "move", to: "m2" });
    assert.equal(result.state, "failed");
    assert.equal(
      result.error?.message,
      `Machine "m2" has 104857600 bytes free in its Pool and "v" has 209715200 bytes written on "m1" since its newest Snapshot: too little to receive the incremental send (the cut was not made; "m1" still holds the Writer and "m2" a Mirror)`,
    );
    assert.equal(m1.state.copy.role, "writer");
    assert.match((m2.state.copy as { snapshot: string }).snapshot, /^g1-.*s$/, "the sync was received");
    assert.deepEqual(m1.asked.map((r) => r.wanted.role), ["writer"], "only the fence reached m1: no cut");
  });
});

Deno.test("a step answered busy after the Machine waited on it is asked again at once, not after the pause", async () => {
  const m1 = fakeMachine("m1", { role: "writer", epoch: 0 });
  const m2 = fakeMachine("m2", { role: "none" });
  await withHost([m1, m2], async (host) => {
    // Each receive answers busy once; with a 5 s pause between asks of its own step the run would take 5 s more.
    const started = performance.now();
    const result = await runVolume({ ...host, busyPauseMs: 5_000 }, "v", { kind: "mirror", to: "m2" });
    assert.equal(result.state, "done", JSON.stringify(result.error));
    assert(performance.now() - started < 2_000, `took ${performance.now() - started} ms`);
  });
});
