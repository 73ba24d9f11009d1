/**
 * The ssh client's arguments and the shell quoting of a remote command, and nothing of installing: what the CLI
 * needs to open its connection to a Machine over SSH without loading the installer (release fetching, staging,
 * signatures, activation).
 *
 * @module
 */

export { shellQuote, sshArgs, sshOptionsFromEnv, sshShell } from "../ssh.ts";
export type { RemoteResult, RemoteShell, SshOptions } from "../ssh.ts";
