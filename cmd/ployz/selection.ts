// What the command line chose about the connection (`--context`, `--connect`, taken out of argv before the
// command parses its own options), and what must be released before the process ends (SSH connections).
// Kept free of imports so the entrypoint can load it before the command tree.

/** The global connection flags of this invocation. */
export interface GlobalFlags {
  /** `--context NAME`. */
  context?: string;
  /** `--connect URL`. */
  connect?: string;
}

let flags: GlobalFlags = {};
const cleanups = new Set<() => void>();

/**
 * Removes `--context NAME`, `--context=NAME`, `--connect URL` and `--connect=URL` from `argv` (up to a `--`) and
 * remembers them; returns the remaining arguments. A flag without a value is left in place for the command's own
 * parser to refuse.
 */
export function takeGlobalFlags(argv: string[]): string[] {
  const rest: string[] = [];
  const found: GlobalFlags = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    const match = /^--(context|connect)(?:=(.*))?$/.exec(arg);
    if (match === null) {
      rest.push(arg);
      continue;
    }
    const value = match[2] ?? argv[i + 1];
    if (value === undefined || (match[2] === undefined && value.startsWith("-"))) {
      rest.push(arg);
      continue;
    }
    if (match[2] === undefined) i++;
    found[match[1] as keyof GlobalFlags] = value;
  }
  flags = found;
  return rest;
}

/** The flags {@link takeGlobalFlags} found. */
export function globalFlags(): GlobalFlags {
  return flags;
}

/** Registers `release` to run when the command ends; returns a function that runs and forgets it early. */
export function atCommandEnd(release: () => void): () => void {
  cleanups.add(release);
  return () => {
    if (cleanups.delete(release)) release();
  };
}

/** Runs every registered release (once). */
export function endCommand(): void {
  for (const release of [...cleanups]) {
    cleanups.delete(release);
    try {
      release();
    } catch {
      // best effort at exit
    }
  }
}
