import config from "../../deno.json" with { type: "json" };

/** This build's version, from deno.json. */
export const PLOYZ_VERSION: string = config.version;

/** What `version --json` reports. */
export interface VersionInfo {
  /** Ployz version. */
  version: string;
  /** Deno runtime version. */
  deno: string;
  /** V8 version. */
  v8: string;
  /** TypeScript version. */
  typescript: string;
  /** Build target triple. */
  target: string;
  /** Whether this is a compiled binary. */
  standalone: boolean;
}

/** The version of this build and of the runtime under it. */
export function versionInfo(): VersionInfo {
  return {
    version: PLOYZ_VERSION,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
    target: Deno.build.target,
    standalone: Deno.build.standalone ?? false,
  };
}
