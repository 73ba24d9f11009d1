// A btrfs Pool on a loop file, for trials and tests: a sparse file of a stated size, a loop device, mkfs.btrfs
// and a mount. Everything set up here is taken down by {@link detachLoopPool}, which also finds what a crashed
// run left behind from the file's path alone.
import { dirname } from "node:path";
import { VolumeError } from "./errors.ts";
import type { Exec } from "./exec.ts";
import { checkSize } from "./names.ts";

/** A loop-file Pool as set up. */
export interface LoopPool {
  /** The backing file. */
  file: string;
  /** The loop device (`/dev/loopN`). */
  device: string;
  /** Where the filesystem is mounted: the Pool's root. */
  mountPoint: string;
}

/** The loop devices backed by `file`, as `losetup -j` reports them. */
export async function loopDevicesOf(exec: Exec, file: string): Promise<string[]> {
  const text = await exec.run(["losetup", "-j", file]);
  return text.split("\n").map((line) => line.split(":")[0].trim()).filter((d) => d.startsWith("/dev/loop"));
}

async function isMounted(exec: Exec, mountPoint: string): Promise<boolean> {
  try {
    await exec.run(["mountpoint", "-q", mountPoint]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes (or re-attaches) a btrfs filesystem in `file` of `sizeBytes` and mounts it at `mountPoint`. An existing
 * file keeps its data: it is attached and mounted again (after a reboot), never formatted twice.
 */
export async function attachLoopPool(
  exec: Exec,
  options: { file: string; sizeBytes: number; mountPoint: string },
): Promise<LoopPool> {
  const { file, mountPoint } = options;
  checkSize(options.sizeBytes, "pool size");
  if (!file.startsWith("/") || !mountPoint.startsWith("/")) {
    throw new VolumeError("invalid_argument", `Pool file and mount point must be absolute paths`);
  }
  let fresh = false;
  await Deno.mkdir(dirname(file), { recursive: true, mode: 0o700 });
  try {
    await Deno.lstat(file);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    const f = await Deno.open(file, { createNew: true, write: true, mode: 0o600 });
    try {
      await f.truncate(options.sizeBytes);
    } finally {
      f.close();
    }
    fresh = true;
  }
  await Deno.mkdir(mountPoint, { recursive: true, mode: 0o700 });
  let device = (await loopDevicesOf(exec, file))[0];
  let attached = false;
  if (device === undefined) {
    device = (await exec.run(["losetup", "-f", "--show", file])).trim();
    attached = true;
  }
  try {
    if (fresh) await exec.run(["mkfs.btrfs", "-q", device]);
    if (!await isMounted(exec, mountPoint)) await exec.run(["mount", "-t", "btrfs", device, mountPoint]);
  } catch (error) {
    if (attached) await exec.run(["losetup", "-d", device]).catch(() => {});
    if (fresh) await Deno.remove(file).catch(() => {});
    throw error;
  }
  return { file, device, mountPoint };
}

/** Unmounts `mountPoint` and detaches every loop device backed by `file`; `removeFile` also deletes the file. */
export async function detachLoopPool(
  exec: Exec,
  options: { file: string; mountPoint: string; removeFile?: boolean },
): Promise<void> {
  if (await isMounted(exec, options.mountPoint)) {
    await exec.run(["umount", options.mountPoint]).catch(async () => {
      // Something still holds it (a Container's bind): detach lazily so the device goes once it is let go.
      await exec.run(["umount", "-l", options.mountPoint]);
    });
  }
  for (const device of await loopDevicesOf(exec, options.file).catch(() => [])) {
    await exec.run(["losetup", "-d", device]).catch(() => {});
  }
  if (options.removeFile === true) await Deno.remove(options.file).catch(() => {});
}
