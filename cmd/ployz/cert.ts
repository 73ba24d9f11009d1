// `ployz cert ls|renew|add|rm|root`: the certificates https routes are served with, as the Entry Machine holds
// them, and the Cluster's internal root. A key goes in with `add` and is never printed by any of them.
import { CliError, type Command } from "../../lib/cli/mod.ts";
import type { CertificateWire } from "../../lib/rpc/mod.ts";
import { jsonLine, withMachine } from "./connect.ts";
import { table } from "./table.ts";
import { sharedOptions } from "./flags.ts";

const MAX_PEM_BYTES = 65_536;

function hostnameOf(positionals: string[]): string {
  return positionals[0].trim().toLowerCase();
}

function statusOf(c: CertificateWire): string {
  if (!c.servable) return `not served: ${c.problem ?? "unknown"}`;
  return c.renew_requested_at !== undefined && (c.renewed_at ?? "") < c.renew_requested_at
    ? "renewal asked"
    : "served";
}

/** The human form of `ployz cert ls`; `names` maps Machine ids to names. */
export function certificateTable(
  certificates: readonly CertificateWire[],
  names: ReadonlyMap<string, string> = new Map(),
): string {
  if (certificates.length === 0) return "No certificates\n";
  const rows = certificates.map((c) => [
    c.hostname,
    c.source,
    c.issuer ?? "-",
    c.not_after ?? "-",
    c.renewed_by === undefined ? "-" : names.get(c.renewed_by) ?? c.renewed_by,
    statusOf(c),
    c.last_error === undefined ? "-" : `${c.last_error_at ?? ""} ${c.last_error}`.trim(),
  ]);
  return table(["HOSTNAME", "SOURCE", "ISSUER", "NOT AFTER", "RENEWED BY", "STATUS", "LAST ERROR"], rows);
}

const certLsCommand: Command = {
  name: "ls",
  summary: "List certificates: hostname, issuer, expiry, which Machine last renewed it, last error",
  usage: "[--json]",
  options: sharedOptions("json"),
  async run({ values, io }): Promise<number> {
    const { certificates, names } = await withMachine(async (client) => {
      const { certificates } = await client.listCertificates();
      const { machines } = await client.listMachines();
      return { certificates, names: new Map(machines.map((m) => [m.id, m.name])) };
    });
    io.out(values.json === true ? jsonLine({ certificates }) : certificateTable(certificates, names));
    return 0;
  },
};

const certRenewCommand: Command = {
  name: "renew",
  summary: "Ask for a renewal of an ACME certificate now; the old one is served until the new one arrives",
  usage: "HOSTNAME [--json]",
  description:
    "For a name whose first issuance failed, asks for the next attempt now instead of after its pause.",
  positionals: [1, 1],
  options: sharedOptions("json"),
  async run({ values, positionals, io }): Promise<number> {
    const hostname = hostnameOf(positionals);
    const answer = await withMachine((client) => client.renewCertificate({ hostname }));
    io.out(
      values.json === true
        ? jsonLine(answer)
        : `Renewal of "${hostname}" asked for; "ployz cert ls" shows the new expiry or the CA's error\n`,
    );
    return 0;
  },
};

async function readPem(path: string, field: string): Promise<string> {
  try {
    const info = await Deno.stat(path);
    if (!info.isFile || info.size > MAX_PEM_BYTES) {
      throw new CliError("invalid_argument", `${field} "${path}": expected a PEM file of at most 64 KiB`, {
        exitCode: 2,
      });
    }
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError("invalid_argument", `Cannot read ${field} "${path}": ${(error as Error).message}`, {
      exitCode: 2,
    });
  }
}

const certAddCommand: Command = {
  name: "add",
  summary: "Serve an operator's certificate, or one from the Cluster's internal root, for a hostname",
  usage: "HOSTNAME (--cert FILE --key FILE | --internal) [--json]",
  description: [
    "The chain and the key go into the replicated certificates row for HOSTNAME, which every Machine loads into",
    "its Ingress Proxy; ployz never renews it. Refused unless the certificate covers HOSTNAME, has not expired",
    "and matches the key.",
    "With --internal, HOSTNAME is served with a certificate issued now by the Cluster's internal root (made",
    "first when there is none) and renewed by ployz; no ACME CA is asked. Clients trust that root",
    '("ployz cert root"). Names under .internal get one without asking; "ployz cert rm HOSTNAME" undoes it.',
  ],
  positionals: [1, 1],
  options: {
    cert: { type: "string" },
    key: { type: "string" },
    internal: { type: "boolean" },
    ...sharedOptions("json"),
  },
  async run({ values, positionals, io }): Promise<number> {
    const hostname = hostnameOf(positionals);
    if (values.internal === true) {
      if (values.cert !== undefined || values.key !== undefined) {
        throw new CliError(
          "invalid_argument",
          '"--internal" takes no "--cert" or "--key": the Cluster root issues it',
          {
            exitCode: 2,
          },
        );
      }
      const answer = await withMachine((client) => client.addInternalCertificate({ hostname }));
      const c = answer.certificate;
      io.out(
        values.json === true
          ? jsonLine(answer)
          : `Issued "${hostname}" from the Cluster's internal root (serial ${c?.serial ?? "?"}, until ${
            c?.not_after ?? "?"
          }); "ployz cert root" prints the root for clients to trust\n`,
      );
      return 0;
    }
    if (typeof values.cert !== "string" || typeof values.key !== "string") {
      throw new CliError("invalid_argument", 'Give both "--cert FILE" and "--key FILE", or "--internal"', {
        exitCode: 2,
      });
    }
    const pem = await readPem(values.cert, "--cert");
    const key = await readPem(values.key, "--key");
    const answer = await withMachine((client) => client.addCertificate({ hostname, pem, key }));
    const c = answer.certificate;
    io.out(
      values.json === true
        ? jsonLine(answer)
        : `Added the certificate for "${hostname}" (serial ${c?.serial ?? "?"}, until ${
          c?.not_after ?? "?"
        })\n`,
    );
    return 0;
  },
};

const certRmCommand: Command = {
  name: "rm",
  summary: "Remove a hostname's certificate (an ACME one is obtained again while an https route names it)",
  usage: "HOSTNAME [--json]",
  positionals: [1, 1],
  options: sharedOptions("json"),
  async run({ values, positionals, io }): Promise<number> {
    const hostname = hostnameOf(positionals);
    const answer = await withMachine((client) => client.removeCertificate({ hostname }));
    if (values.json === true) io.out(jsonLine(answer));
    else if (answer.removed === true) io.out(`Removed the certificate for "${hostname}"\n`);
    else throw new CliError("not_found", `No certificate for "${hostname}": see "ployz cert ls"`);
    return 0;
  },
};

const certRootCommand: Command = {
  name: "root",
  summary: "Print the Cluster's internal root certificate (PEM) for clients to trust; never its key",
  usage: "[--json]",
  description:
    "Every Machine serves .internal names, and names added with --internal, with certificates this root signed.",
  options: sharedOptions("json"),
  async run({ values, io }): Promise<number> {
    const root = await withMachine((client) => client.clusterRoot());
    io.out(values.json === true ? jsonLine(root) : root.pem.endsWith("\n") ? root.pem : `${root.pem}\n`);
    return 0;
  },
};

/** `ployz cert`. */
export const certCommand: Command = {
  name: "cert",
  summary: "Certificates of https routes: list, renew, add an operator's or an internal one, remove, root",
  subcommands: [certLsCommand, certRenewCommand, certAddCommand, certRmCommand, certRootCommand],
};
