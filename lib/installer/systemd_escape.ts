/** A value that cannot be written into a systemd unit safely. */
export class UnitValueError extends TypeError {
  /** Names the unit field, the refused value and why. */
  constructor(field: string, value: string, reason: string) {
    super(`Cannot write ${field}=${JSON.stringify(value)} into a systemd unit: ${reason}`);
    this.name = "UnitValueError";
  }
}

// systemd reads C0 control characters (newline above all) as structure, never as part of a value.
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function refuseControl(field: string, value: string): void {
  if (CONTROL.test(value)) {
    throw new UnitValueError(field, value, "it contains a newline or control character");
  }
}

/**
 * Quotes one word of a command line (`ExecStart=`): `%` becomes `%%` (specifiers), `$` becomes `$$` (variable
 * expansion), and a word with whitespace, quotes or backslashes is double-quoted with C escapes.
 */
export function quoteExecWord(field: string, word: string): string {
  refuseControl(field, word);
  const escaped = word.replaceAll("%", "%%").replaceAll("$", "$$$$");
  if (escaped !== "" && !/[\s"'\\;]/.test(escaped)) return escaped;
  return `"${escaped.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}

/** One `Environment=` assignment, quoted whole; `%` becomes `%%`. The name must be a plain identifier. */
export function environmentLine(name: string, value: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    throw new UnitValueError("Environment", name, "a variable name must match [A-Za-z_][A-Za-z0-9_]*");
  }
  refuseControl(`Environment ${name}`, value);
  const escaped = `${name}=${value}`.replaceAll("%", "%%").replaceAll("\\", "\\\\").replaceAll('"', '\\"');
  return `Environment="${escaped}"`;
}

/** A path for a path-list directive (`ReadWritePaths=`): absolute, no `..`, quoted when it has whitespace. */
export function quotePath(field: string, path: string): string {
  refuseControl(field, path);
  const bare = path.replace(/^[-+]/, "");
  if (!bare.startsWith("/") || bare.split("/").includes("..")) {
    throw new UnitValueError(field, path, 'expected an absolute path without ".."');
  }
  const escaped = path.replaceAll("%", "%%");
  return /[\s"\\]/.test(escaped) ? `"${escaped.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"` : escaped;
}
