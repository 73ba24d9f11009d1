// The btrfs Pool: each Volume is a subvolume `<root>/volumes/<name>` limited by a qgroup on its referenced bytes;
// its Snapshots are read-only subvolumes `<root>/snapshots/<name>/<snapshot>`, which is also where a receive puts
// them (btrfs names a received subvolume after the sender's, so both sides share Snapshot names). A Mirror is a
// Volume with Snapshots and no writable subvolume.
import { join } from "node:path";
import { VolumeError } from "./errors.ts";
import type { Exec } from "./exec.ts";
import { checkNotBelowUsage, checkSize, checkSnapshotName, checkVolumeName } from "./names.ts";
import type { Pool, PoolSpace, PoolVolume, SendStream, VolumeUsage } from "./pool.ts";

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Parses `btrfs subvolume list` lines into paths relative to the filesystem's top level, in printed order. */
export function parseSubvolumeList(text: string): string[] {
  const paths: string[] = [];
  for (const line of text.split("\n")) {
    const match = / path (.+)$/.exec(line.trim());
    if (match !== null) paths.push(match[1].replace(/^<FS_TREE>\//, ""));
  }
  return paths;
}

/**
 * Parses `btrfs qgroup show --raw -re` for qgroup `0/<id>`: referenced bytes, the referenced limit, and the exclusive
 * bytes (extents no other subvolume shares: for a writable Volume, what was written since its newest Snapshot).
 */
export function parseQgroup(text: string, id: number): VolumeUsage | undefined {
  for (const line of text.split("\n")) {
    const cols = line.trim().split(/\s+/);
    if (cols[0] !== `0/${id}`) continue;
    const used = Number(cols[1]);
    const exclusive = Number(cols[2]);
    const limit = cols[3] === "none" || cols[3] === undefined ? undefined : Number(cols[3]);
    if (!Number.isSafeInteger(used)) return undefined;
    return {
      usedBytes: used,
      sizeBytes: limit !== undefined && Number.isSafeInteger(limit) ? limit : undefined,
      ...(Number.isSafeInteger(exclusive) ? { changedBytes: exclusive } : {}),
    };
  }
  return undefined;
}

/** Parses `btrfs filesystem usage -b`: device size and estimated free bytes. */
export function parseFilesystemUsage(text: string): PoolSpace | undefined {
  const total = /Device size:\s+(\d+)/.exec(text);
  const free = /Free \(estimated\):\s+(\d+)/.exec(text);
  if (total === null || free === null) return undefined;
  return { totalBytes: Number(total[1]), freeBytes: Number(free[1]) };
}

/** Opens the btrfs filesystem mounted at `root` as a Pool, enabling quotas (qgroups) when they are off. */
export async function openBtrfsPool(root: string, exec: Exec): Promise<Pool> {
  const fs = await exec.run(["stat", "-f", "-c", "%T", root]).catch((error) => {
    throw new VolumeError("not_found", `Pool path "${root}" cannot be read: ${error.message}`, {
      cause: error,
    });
  });
  if (fs.trim() !== "btrfs") {
    throw new VolumeError("invalid_argument", `Pool path "${root}" is on ${fs.trim()}, not btrfs`);
  }
  await exec.run(["btrfs", "quota", "enable", root]);
  await Deno.mkdir(join(root, "volumes"), { recursive: true, mode: 0o700 });
  await Deno.mkdir(join(root, "snapshots"), { recursive: true, mode: 0o700 });
  return btrfsPool(root, exec);
}

/** The btrfs Pool at `root` (already a btrfs mount with quotas on; see {@link openBtrfsPool}). */
export function btrfsPool(root: string, exec: Exec): Pool {
  const writable = (volume: string): string => join(root, "volumes", checkVolumeName(volume));
  const snapDir = (volume: string): string => join(root, "snapshots", checkVolumeName(volume));
  const snapPath = (volume: string, snapshot: string): string =>
    join(snapDir(volume), checkSnapshotName(snapshot));

  // Read-only subvolumes under snapshots/<volume>/, oldest first (by the generation that created them here).
  async function snapshots(volume: string): Promise<string[]> {
    const dir = snapDir(volume);
    if (!await exists(dir)) return [];
    const listed = parseSubvolumeList(
      await exec.run(["btrfs", "subvolume", "list", "-r", "-c", "--sort=ogen", root]),
    );
    const suffix = `snapshots/${volume}/`;
    const names: string[] = [];
    for (const path of listed) {
      const at = path.lastIndexOf(suffix);
      if (at < 0 || (at > 0 && path[at - 1] !== "/")) continue;
      const name = path.slice(at + suffix.length);
      if (!name.includes("/") && await exists(join(dir, name))) names.push(name);
    }
    return names;
  }

  async function rootId(path: string): Promise<number> {
    const id = Number((await exec.run(["btrfs", "inspect-internal", "rootid", path])).trim());
    if (!Number.isSafeInteger(id)) throw new VolumeError("internal", `No subvolume id for "${path}"`);
    return id;
  }

  async function usage(volume: string): Promise<VolumeUsage> {
    let path = writable(volume);
    const isWritable = await exists(path);
    if (!isWritable) {
      const snaps = await snapshots(volume);
      if (snaps.length === 0) {
        throw new VolumeError("not_found", `Volume "${volume}" is not in the Pool at ${root}`);
      }
      path = snapPath(volume, snaps[snaps.length - 1]);
    }
    const id = await rootId(path);
    // Qgroup numbers are settled at a transaction commit.
    await exec.run(["btrfs", "filesystem", "sync", root]);
    const parsed = parseQgroup(await exec.run(["btrfs", "qgroup", "show", "--raw", "-re", root]), id);
    if (parsed === undefined) {
      throw new VolumeError("internal", `No qgroup for Volume "${volume}" at ${root}`);
    }
    if (!isWritable) delete parsed.changedBytes;
    return parsed;
  }

  async function inspect(volume: string): Promise<PoolVolume | undefined> {
    const isWritable = await exists(writable(volume));
    const snaps = await snapshots(volume);
    if (!isWritable && snaps.length === 0) return undefined;
    return { name: volume, writable: isWritable, snapshots: snaps };
  }

  async function deleteSubvolume(path: string): Promise<void> {
    if (await exists(path)) await exec.run(["btrfs", "subvolume", "delete", path]);
  }

  return {
    kind: "btrfs",
    where: root,
    mountPath: writable,
    async create(volume, sizeBytes) {
      checkSize(sizeBytes);
      const path = writable(volume);
      if (await exists(path) || (await snapshots(volume)).length > 0) {
        throw new VolumeError("conflict", `Volume "${volume}" already exists in the Pool at ${root}`);
      }
      await exec.run(["btrfs", "subvolume", "create", path]);
      try {
        await exec.run(["btrfs", "qgroup", "limit", String(sizeBytes), path]);
      } catch (error) {
        await deleteSubvolume(path);
        throw error;
      }
    },
    async snapshot(volume, snapshot) {
      const from = writable(volume);
      const to = snapPath(volume, snapshot);
      if (!await exists(from)) {
        throw new VolumeError("conflict", `Volume "${volume}" has no writable copy to snapshot at ${root}`);
      }
      if (await exists(to)) {
        throw new VolumeError("conflict", `Snapshot "${volume}@${snapshot}" already exists`);
      }
      await Deno.mkdir(snapDir(volume), { recursive: true, mode: 0o700 });
      await exec.run(["btrfs", "subvolume", "snapshot", "-r", from, to]);
    },
    inspect,
    async list() {
      const names = new Set<string>();
      for (const dir of ["volumes", "snapshots"]) {
        try {
          for await (const entry of Deno.readDir(join(root, dir))) names.add(entry.name);
        } catch (error) {
          if (!(error instanceof Deno.errors.NotFound)) throw error;
        }
      }
      const held: string[] = [];
      for (const name of [...names].sort()) {
        try {
          if (await inspect(checkVolumeName(name)) !== undefined) held.push(name);
        } catch {
          // Not a name ployz makes: not a Volume of this Pool.
        }
      }
      return held;
    },
    send(volume, snapshot, base, signal): SendStream {
      const argv = ["btrfs", "send", "-q"];
      if (base !== undefined) argv.push("-p", snapPath(volume, base));
      argv.push(snapPath(volume, snapshot));
      return exec.stream(argv, { signal });
    },
    async receive(volume, snapshot, input, signal) {
      const dir = snapDir(volume);
      const target = snapPath(volume, snapshot);
      await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
      const before = new Set<string>();
      for await (const entry of Deno.readDir(dir)) before.add(entry.name);
      if (before.has(snapshot)) {
        const done = await snapshots(volume);
        if (done.includes(snapshot)) {
          await input.cancel().catch(() => {});
          throw new VolumeError("conflict", `Snapshot "${volume}@${snapshot}" is already here`);
        }
        // A receive that died half-way left a writable subvolume under the Snapshot's name.
        await deleteSubvolume(target);
        before.delete(snapshot);
      }
      const cleanUp = async (): Promise<void> => {
        for await (const entry of Deno.readDir(dir)) {
          if (!before.has(entry.name)) await deleteSubvolume(join(dir, entry.name)).catch(() => {});
        }
      };
      try {
        await exec.run(["btrfs", "receive", "-e", dir], { stdin: input, signal });
      } catch (error) {
        await cleanUp();
        throw new VolumeError(
          "unavailable",
          `Receiving "${volume}@${snapshot}" failed, nothing kept: ${(error as Error).message}`,
          { cause: error },
        );
      }
      if (!(await snapshots(volume)).includes(snapshot)) {
        await cleanUp();
        throw new VolumeError(
          "invalid_argument",
          `The stream for "${volume}@${snapshot}" held another Snapshot; nothing kept`,
        );
      }
    },
    async promote(volume, snapshot, sizeBytes) {
      checkSize(sizeBytes);
      const from = snapPath(volume, snapshot);
      if (!(await snapshots(volume)).includes(snapshot)) {
        throw new VolumeError("not_found", `Snapshot "${volume}@${snapshot}" is not in the Pool at ${root}`);
      }
      await deleteSubvolume(writable(volume));
      await exec.run(["btrfs", "subvolume", "snapshot", from, writable(volume)]);
      await exec.run(["btrfs", "qgroup", "limit", String(sizeBytes), writable(volume)]);
    },
    async demote(volume) {
      await deleteSubvolume(writable(volume));
    },
    async destroySnapshot(volume, snapshot) {
      await deleteSubvolume(snapPath(volume, snapshot));
    },
    async destroy(volume) {
      await deleteSubvolume(writable(volume));
      for (const snapshot of await snapshots(volume)) await deleteSubvolume(snapPath(volume, snapshot));
      // Half-received leftovers are subvolumes too; anything else there is not ployz's and stays.
      if (await exists(snapDir(volume))) {
        for await (const entry of Deno.readDir(snapDir(volume))) {
          await deleteSubvolume(join(snapDir(volume), entry.name)).catch(() => {});
        }
        await Deno.remove(snapDir(volume)).catch(() => {});
      }
    },
    async resize(volume, sizeBytes) {
      checkSize(sizeBytes);
      checkNotBelowUsage(volume, sizeBytes, (await usage(volume)).usedBytes);
      await exec.run(["btrfs", "qgroup", "limit", String(sizeBytes), writable(volume)]);
    },
    usage,
    async space() {
      const parsed = parseFilesystemUsage(await exec.run(["btrfs", "filesystem", "usage", "-b", root]));
      if (parsed === undefined) {
        throw new VolumeError("internal", `Cannot read the space of the Pool at ${root}`);
      }
      return parsed;
    },
  };
}
