// Activation: the verified, preflighted tree becomes `<prefix>/releases/<version>/`, the `current` symlink is
// swapped atomically, `ployzd`/`ployz` links point through `current`, and the units are written. This is not a
// transaction across files: each step is durable on its own, and the attempt record says which one was reached.
import { basename, join } from "node:path";
import { renderUnit, type UnitSubcommand } from "./units.ts";
import { syncDir, writeFileAtomic } from "../util/mod.ts";
import { readLinkOrUndefined, replaceSymlink } from "./symlink.ts";
import { currentLink, type InstallPaths, releasesDir } from "./paths.ts";
import { recordFound } from "./takeover.ts";

/** The version `current` points at, or undefined when nothing is installed. */
export async function currentVersion(paths: InstallPaths): Promise<string | undefined> {
  const target = await readLinkOrUndefined(currentLink(paths));
  return target === undefined ? undefined : basename(target);
}

/** The release directory `current` resolves to, or undefined. */
export async function currentTree(paths: InstallPaths): Promise<string | undefined> {
  const version = await currentVersion(paths);
  return version === undefined ? undefined : join(releasesDir(paths), version);
}

/**
 * Moves the staged tree to `<prefix>/releases/<version>`. A leftover directory of that version (never the one
 * `current` points at, which the caller has ruled out) is replaced by the freshly verified bytes.
 */
export async function placeRelease(
  paths: InstallPaths,
  tree: string,
  version: string,
  attemptId: string,
): Promise<string> {
  const releases = releasesDir(paths);
  await Deno.mkdir(releases, { recursive: true, mode: 0o755 });
  const incoming = join(releases, `.incoming-${attemptId}`);
  await Deno.remove(incoming, { recursive: true }).catch(() => {});
  try {
    await Deno.rename(tree, incoming);
  } catch (error) {
    // Staging and the prefix on different filesystems: copy, then rename within the prefix.
    if (!(error instanceof Error && /os error 18/.test(error.message))) throw error;
    await copyTree(tree, incoming);
  }
  await Deno.chmod(incoming, 0o755);
  // Every byte of the release reaches the disk before any name points at it: a power loss after `current`
  // switches must not leave it pointing at empty or torn files.
  await syncTree(incoming);
  const dest = join(releases, version);
  const stale = join(releases, `.stale-${attemptId}`);
  const hadOld = await Deno.lstat(dest).then(() => true, () => false);
  if (hadOld) await Deno.rename(dest, stale);
  await Deno.rename(incoming, dest);
  await syncDir(releases);
  if (hadOld) await Deno.remove(stale, { recursive: true });
  return dest;
}

// fsyncs in flight at once. A release tree holds about 6,800 files and directories: one at a time, each waits for
// its own journal commit (22-34 s for a 150 MB tree on a loaded 2-core host); 32 at a time, the filesystem commits
// them together (4.4-4.9 s).
const SYNC_CONCURRENCY = 32;

/**
 * Fsyncs every regular file and directory under `dir` (symlinks need only their directory's fsync), several at a
 * time; returns once all are synced, and throws if any fsync failed.
 */
export async function syncTree(dir: string): Promise<void> {
  const paths: { path: string; data: boolean }[] = [];
  await listTree(dir, paths);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < paths.length) {
      const { path, data } = paths[next++];
      if (!data) {
        await syncDir(path);
        continue;
      }
      using file = await Deno.open(path, { read: true });
      await file.syncData();
    }
  };
  // Every worker ends before this returns, even when one failed.
  const ended = await Promise.allSettled(Array.from({ length: SYNC_CONCURRENCY }, worker));
  const failed = ended.find((r) => r.status === "rejected");
  if (failed !== undefined) throw failed.reason;
}

// Appends every regular file (`data`) and directory under `dir`, `dir` last, to `out`.
async function listTree(dir: string, out: { path: string; data: boolean }[]): Promise<void> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) await listTree(path, out);
    else if (entry.isFile) out.push({ path, data: true });
  }
  out.push({ path: dir, data: false });
}

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    const src = join(from, entry.name);
    const dst = join(to, entry.name);
    if (entry.isSymlink) await replaceSymlink(dst, await Deno.readLink(src));
    else if (entry.isDirectory) await copyTree(src, dst);
    else {
      await Deno.copyFile(src, dst);
      const mode = (await Deno.stat(src)).mode;
      if (mode !== null) await Deno.chmod(dst, mode & 0o7777);
    }
  }
  const mode = (await Deno.stat(from)).mode;
  if (mode !== null) await Deno.chmod(to, mode & 0o7777);
}

/** Swaps `current` to `releases/<version>` (relative link) atomically. */
export async function switchCurrent(paths: InstallPaths, version: string): Promise<void> {
  await replaceSymlink(currentLink(paths), join("releases", version));
}

/**
 * Points `<binDir>/ployzd`, `ployz` and `ployz-systemd` (the daemon's door to systemd, which the serve set may run
 * by that name) at `<prefix>/current/bin/…`, recording anything foreign found there.
 */
export async function linkBinaries(paths: InstallPaths): Promise<void> {
  await Deno.mkdir(paths.binDir, { recursive: true });
  for (const name of ["ployzd", "ployz", "ployz-systemd"]) {
    const link = join(paths.binDir, name);
    const want = join(currentLink(paths), "bin", name);
    if ((await readLinkOrUndefined(link)) === want) continue;
    await recordFound(paths, link, (_info, target) => Promise.resolve(target === want));
    await replaceSymlink(link, want);
  }
}

const UNIT_HEADER = "# Generated by ployzd install;";
// DNS runs only as the daemon's pair of runtime units (lib/serving's systemdDnsRunner), never as an installed unit.
const UNITS: UnitSubcommand[] = ["serve", "observe"];
/** The installed dns unit earlier releases wrote; removed, since nothing starts it. */
const RETIRED_UNITS = ["ployz-dns.service"];

/**
 * Writes the serve and observe units, running the release through `<prefix>/current`, and removes retired
 * units this installer wrote. Returns the names of units whose file changed. A unit file not written by the
 * installer is recorded (and copied) before replacement, and a retired one not written by it is left alone.
 */
export async function writeUnits(paths: InstallPaths): Promise<string[]> {
  await Deno.mkdir(paths.unitDir, { recursive: true });
  const changed: string[] = [];
  for (const sub of UNITS) {
    const unit = renderUnit(sub, {
      deno: join(currentLink(paths), "deno"),
      appDir: currentLink(paths),
      layout: paths.layout,
    });
    const path = join(paths.unitDir, unit.name);
    const before = await Deno.readTextFile(path).catch(() => undefined);
    if (before === unit.text) continue;
    await recordFound(
      paths,
      path,
      async (info) => info.isFile && (await Deno.readTextFile(path)).startsWith(UNIT_HEADER),
    );
    await writeFileAtomic(path, unit.text);
    changed.push(unit.name);
  }
  for (const name of RETIRED_UNITS) {
    const path = join(paths.unitDir, name);
    const text = await Deno.readTextFile(path).catch(() => undefined);
    if (text === undefined || !text.startsWith(UNIT_HEADER)) continue;
    await Deno.remove(path);
    changed.push(name);
  }
  return changed;
}

/**
 * Removes old releases beyond `keepOld`, never one named in `protect` (current, the previous release, the
 * worker's own release); among the rest the highest versions are kept. Returns the removed versions.
 */
export async function pruneReleases(
  paths: InstallPaths,
  protect: Set<string>,
  keepOld = 2,
): Promise<string[]> {
  const releases = releasesDir(paths);
  const entries: { name: string }[] = [];
  for await (const entry of Deno.readDir(releases)) {
    if (!entry.isDirectory) continue;
    if (entry.name.startsWith(".incoming-") || entry.name.startsWith(".stale-")) {
      await Deno.remove(join(releases, entry.name), { recursive: true }).catch(() => {});
      continue;
    }
    entries.push({ name: entry.name });
  }
  const current = await currentVersion(paths);
  const old = entries.filter((e) => e.name !== current).sort((a, b) => compareVersions(b.name, a.name));
  const kept = old.filter((e) => protect.has(e.name)).map((e) => e.name);
  const removed: string[] = [];
  for (const entry of old) {
    if (kept.includes(entry.name)) continue;
    if (kept.length < keepOld) {
      kept.push(entry.name);
      continue;
    }
    await Deno.remove(join(releases, entry.name), { recursive: true });
    removed.push(entry.name);
  }
  return removed;
}

/** Orders versions by precedence: numeric core first, a pre-release below its release. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string): [number[], string] => {
    const [core, pre = ""] = v.split(/-(.*)/s);
    return [core.split(".").map((n) => Number(n) || 0), pre];
  };
  const [ca, pa] = parse(a);
  const [cb, pb] = parse(b);
  for (let i = 0; i < 3; i++) if (ca[i] !== cb[i]) return (ca[i] ?? 0) - (cb[i] ?? 0);
  if (pa === pb) return 0;
  if (pa === "") return 1;
  if (pb === "") return -1;
  return pa < pb ? -1 : 1;
}
