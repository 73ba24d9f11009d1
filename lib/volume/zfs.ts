// The ZFS Pool: each Volume is a dataset `<dataset>/<name>` with a `refquota`, mounted at `<mountRoot>/<name>`;
// Snapshots are `<dataset>/<name>@<snapshot>`. A Mirror is the same dataset, received unmounted and read-only, so
// later incremental receives apply to it; promoting rolls it back to the wanted Snapshot and makes it writable.
import { VolumeError } from "./errors.ts";
import type { Exec } from "./exec.ts";
import { checkNotBelowUsage, checkSize, checkSnapshotName, checkVolumeName } from "./names.ts";
import type { Pool, PoolVolume, SendStream, VolumeUsage } from "./pool.ts";

const DATASET = /^[A-Za-z0-9][A-Za-z0-9_.:-]*(\/[A-Za-z0-9][A-Za-z0-9_.:-]*)*$/;

/** The ZFS Pool under `dataset` (for example `tank/ployz`), mounting Volumes under `mountRoot`. */
export function zfsPool(dataset: string, mountRoot: string, exec: Exec): Pool {
  if (!DATASET.test(dataset) || dataset.length > 200) {
    throw new VolumeError("invalid_argument", `"${dataset.slice(0, 210)}" is not a ZFS dataset name`);
  }
  if (!mountRoot.startsWith("/") || mountRoot.includes("..")) {
    throw new VolumeError("invalid_argument", `ZFS mount root "${mountRoot}" must be an absolute path`);
  }
  const ds = (volume: string): string => `${dataset}/${checkVolumeName(volume)}`;
  const snap = (volume: string, snapshot: string): string => `${ds(volume)}@${checkSnapshotName(snapshot)}`;
  const mountPath = (volume: string): string => `${mountRoot}/${checkVolumeName(volume)}`;

  async function inspect(volume: string): Promise<PoolVolume | undefined> {
    let props: string;
    try {
      props = await exec.run(["zfs", "get", "-H", "-p", "-o", "value", "readonly", ds(volume)]);
    } catch (error) {
      if (/does not exist/.test((error as Error).message)) return undefined;
      throw error;
    }
    const listed = await exec.run([
      "zfs",
      "list",
      "-H",
      "-t",
      "snapshot",
      "-o",
      "name",
      "-s",
      "createtxg",
      "-d",
      "1",
      ds(volume),
    ]);
    const snapshots = listed.split("\n").map((l) => l.trim()).filter((l) => l.startsWith(`${ds(volume)}@`))
      .map((l) => l.slice(ds(volume).length + 1));
    return { name: volume, writable: props.trim() === "off", snapshots };
  }

  async function usage(volume: string): Promise<VolumeUsage> {
    const text = await exec.run([
      "zfs",
      "get",
      "-H",
      "-p",
      "-o",
      "value",
      "referenced,refquota,written,readonly",
      ds(volume),
    ]);
    const [used, quota, written] = text.trim().split("\n").map((v) => Number(v.trim()));
    const readonly = text.trim().split("\n")[3]?.trim() === "on";
    if (!Number.isSafeInteger(used)) {
      throw new VolumeError("internal", `Cannot read the usage of "${ds(volume)}"`);
    }
    return {
      usedBytes: used,
      sizeBytes: Number.isSafeInteger(quota) && quota > 0 ? quota : undefined,
      // `written`: bytes written since the previous Snapshot; a Mirror (read-only) changes only by receives.
      ...(Number.isSafeInteger(written) && !readonly ? { changedBytes: written } : {}),
    };
  }

  return {
    kind: "zfs",
    where: dataset,
    mountPath,
    async create(volume, sizeBytes) {
      checkSize(sizeBytes);
      if (await inspect(volume) !== undefined) {
        throw new VolumeError("conflict", `Volume "${volume}" already exists in the Pool ${dataset}`);
      }
      await exec.run([
        "zfs",
        "create",
        "-o",
        `refquota=${sizeBytes}`,
        "-o",
        `mountpoint=${mountPath(volume)}`,
        ds(volume),
      ]);
    },
    async snapshot(volume, snapshot) {
      await exec.run(["zfs", "snapshot", snap(volume, snapshot)]);
    },
    inspect,
    async list() {
      const text = await exec.run([
        "zfs",
        "list",
        "-H",
        "-o",
        "name",
        "-t",
        "filesystem",
        "-d",
        "1",
        dataset,
      ]);
      return text.split("\n").map((l) => l.trim()).filter((l) => l.startsWith(`${dataset}/`))
        .map((l) => l.slice(dataset.length + 1)).sort();
    },
    send(volume, snapshot, base, signal): SendStream {
      const argv = ["zfs", "send"];
      if (base !== undefined) argv.push("-i", snap(volume, base));
      argv.push(snap(volume, snapshot));
      return exec.stream(argv, { signal });
    },
    async receive(volume, snapshot, input, signal) {
      checkSnapshotName(snapshot);
      const held = await inspect(volume);
      if (held?.snapshots.includes(snapshot)) {
        await input.cancel().catch(() => {});
        throw new VolumeError("conflict", `Snapshot "${volume}@${snapshot}" is already here`);
      }
      // -u: a Mirror is never mounted; a full receive makes it read-only. Without -s a failed receive keeps nothing.
      const argv = held === undefined
        ? ["zfs", "receive", "-u", "-o", "readonly=on", "-o", `mountpoint=${mountPath(volume)}`, ds(volume)]
        : ["zfs", "receive", "-u", ds(volume)];
      try {
        await exec.run(argv, { stdin: input, signal });
      } catch (error) {
        throw new VolumeError(
          "unavailable",
          `Receiving "${volume}@${snapshot}" failed, nothing kept: ${(error as Error).message}`,
          { cause: error },
        );
      }
      if (!(await inspect(volume))?.snapshots.includes(snapshot)) {
        throw new VolumeError(
          "invalid_argument",
          `The stream for "${volume}@${snapshot}" held another Snapshot`,
        );
      }
    },
    async promote(volume, snapshot, sizeBytes) {
      checkSize(sizeBytes);
      await exec.run(["zfs", "rollback", "-r", snap(volume, snapshot)]);
      await exec.run(["zfs", "set", "readonly=off", `refquota=${sizeBytes}`, ds(volume)]);
      await exec.run(["zfs", "mount", ds(volume)]);
    },
    async demote(volume) {
      await exec.run(["zfs", "set", "readonly=on", ds(volume)]);
      await exec.run(["zfs", "unmount", ds(volume)]).catch((error) => {
        if (!/not currently mounted/.test((error as Error).message)) throw error;
      });
    },
    async destroySnapshot(volume, snapshot) {
      await exec.run(["zfs", "destroy", snap(volume, snapshot)]);
    },
    async destroy(volume) {
      if (await inspect(volume) === undefined) return;
      await exec.run(["zfs", "destroy", "-r", ds(volume)]);
    },
    async resize(volume, sizeBytes) {
      checkSize(sizeBytes);
      checkNotBelowUsage(volume, sizeBytes, (await usage(volume)).usedBytes);
      await exec.run(["zfs", "set", `refquota=${sizeBytes}`, ds(volume)]);
    },
    usage,
    async space() {
      const text = await exec.run(["zfs", "get", "-H", "-p", "-o", "value", "used,available", dataset]);
      const [used, free] = text.trim().split("\n").map((v) => Number(v.trim()));
      if (!Number.isSafeInteger(used) || !Number.isSafeInteger(free)) {
        throw new VolumeError("internal", `Cannot read the space of the Pool ${dataset}`);
      }
      return { totalBytes: used + free, freeBytes: free };
    },
  };
}
