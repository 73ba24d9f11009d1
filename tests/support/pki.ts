// Certificates for end-to-end tests, made with openssl: a self-signed one (a CA, or a leaf served as is) and one a
// CA issues. EC P-256 keys, valid two days.
import { run } from "./spawn.ts";

/** A key and its certificate, as PEM files. */
export interface PemFiles {
  /** The private key's file. */
  key: string;
  /** The certificate's file. */
  cert: string;
}

/** What a certificate names: its common name and, optionally, its subjectAltName (`IP:…`, `DNS:…`). */
export interface Subject {
  cn: string;
  san?: string;
}

const NEW_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];

async function openssl(args: string[]): Promise<void> {
  const result = await run("openssl", args);
  if (result.code !== 0) throw new Error(`openssl ${args.join(" ")} failed: ${result.stderr}`);
}

/** Writes a new key and a certificate for `subject` signed by that key itself to `out`. */
export async function selfSignedCertificate(out: PemFiles, subject: Subject): Promise<PemFiles> {
  await openssl([
    "req",
    "-x509",
    ...NEW_KEY,
    "-days",
    "2",
    "-subj",
    `/CN=${subject.cn}`,
    ...(subject.san === undefined ? [] : ["-addext", `subjectAltName=${subject.san}`]),
    "-keyout",
    out.key,
    "-out",
    out.cert,
  ]);
  return out;
}

/** Writes a new key and a certificate for `subject` signed by `ca` to `out` (its request beside it). */
export async function issueCertificate(out: PemFiles, subject: Subject, ca: PemFiles): Promise<PemFiles> {
  const csr = `${out.cert}.csr`;
  await openssl(["req", ...NEW_KEY, "-subj", `/CN=${subject.cn}`, "-keyout", out.key, "-out", csr]);
  const ext = `${out.cert}.ext`;
  await Deno.writeTextFile(ext, subject.san === undefined ? "" : `subjectAltName=${subject.san}\n`);
  await openssl([
    "x509",
    "-req",
    "-days",
    "2",
    "-in",
    csr,
    "-CA",
    ca.cert,
    "-CAkey",
    ca.key,
    "-CAcreateserial",
    "-extfile",
    ext,
    "-out",
    out.cert,
  ]);
  return out;
}
