/**
 * Obtaining a certificate from an ACME CA (RFC 8555) with HTTP-01, through the npm `acme-client` (a maintained
 * RFC 8555 client: account, order, authorizations, finalize, download; its keys and CSR come from Node's crypto).
 * Ployz writes no protocol or crypto of its own: it only publishes each challenge answer where every Machine's
 * Ingress Proxy serves it, and stores the result.
 *
 * Settings come from the daemon's environment: `PLOYZ_ACME_DIRECTORY` (default Let's Encrypt), `PLOYZ_ACME_EMAIL`
 * (optional contact). The roots trusted for the CA's own TLS are Deno's bundled ones, or, for a private CA, those
 * in `<data dir>/acme/ca.pem` when present (they replace the bundled ones); verification is never turned off. Each
 * Machine keeps its account (key and URL at the CA) in `<data dir>/acme/account.json` (0600).
 *
 * @module
 */

import type acmeModule from "acme-client";
import https from "node:https";
import { dirname, join } from "node:path";
import { CodedError, writeFileAtomic } from "../util/mod.ts";

/**
 * acme-client (with axios and its crypto) adds ~36 MB to a process at import, so it is loaded when a certificate
 * is first needed, not by every `ployzd serve` (the literal specifier keeps it in a compiled binary).
 */
async function loadAcme(): Promise<typeof acmeModule> {
  return (await import("acme-client")).default;
}

/** Let's Encrypt's production directory, used unless `PLOYZ_ACME_DIRECTORY` names another CA. */
export const DEFAULT_ACME_DIRECTORY = "https://acme-v02.api.letsencrypt.org/directory";
/** Bound on one HTTP exchange with the CA. */
const REQUEST_TIMEOUT_MS = 30_000;
/**
 * How acme-client polls a challenge and the order while the CA works: again after 1 s, doubling to 10 s, 12
 * times (1 + 2 + 4 + 8 + 8 × 10 = 95 s, inside `obtainCertificate`'s 120 s). Its default (5 s doubling to
 * 30 s) saw a CA's answer up to 30 s after it was ready: a CA that validates in a second still cost 5 s.
 */
const ACME_POLLING = { backoffAttempts: 12, backoffMin: 1_000, backoffMax: 10_000 } as const;

/** Where and how to reach the CA. */
export interface AcmeSettings {
  /** The CA's directory URL. */
  directoryUrl: string;
  /** Contact address for the account, when given. */
  email?: string;
  /** Roots (PEM) trusted for the CA's TLS instead of the bundled ones (a private CA). */
  caPem?: string;
  /** This Machine's account file: key and URL at the CA (created 0600 when absent). */
  accountPath: string;
}

/** A CA's refusal or an unreachable CA; the message carries the CA's problem detail. */
export class AcmeError extends CodedError {
  /** Names the error. */
  override name = "AcmeError";
}

/** The settings from the environment and `<dataDir>/acme/`. */
export async function acmeSettingsFromEnv(
  dataDir: string,
  env: (name: string) => string | undefined = (n) => Deno.env.get(n),
): Promise<AcmeSettings> {
  const directoryUrl = env("PLOYZ_ACME_DIRECTORY")?.trim() || DEFAULT_ACME_DIRECTORY;
  const parsed = URL.canParse(directoryUrl) ? new URL(directoryUrl) : undefined;
  if (parsed?.protocol !== "https:") {
    throw new AcmeError(
      "invalid_argument",
      `PLOYZ_ACME_DIRECTORY="${directoryUrl}" is not an https URL`,
    );
  }
  const email = env("PLOYZ_ACME_EMAIL")?.trim() || undefined;
  let caPem: string | undefined;
  try {
    caPem = await Deno.readTextFile(join(dataDir, "acme", "ca.pem"));
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return { directoryUrl, email, caPem, accountPath: join(dataDir, "acme", "account.json") };
}

/** The answer publisher {@link obtainCertificate} drives. */
export interface ChallengeBoard {
  /** Makes `keyAuthorization` servable at `/.well-known/acme-challenge/<token>` by every Machine. */
  publish(hostname: string, token: string, keyAuthorization: string): Promise<void>;
  /** Withdraws it. */
  withdraw(token: string): Promise<void>;
}

/** A freshly issued certificate. */
export interface IssuedCertificate {
  /** Chain, PEM. */
  pem: string;
  /** Private key, PEM (PKCS#8). */
  key: string;
}

/** Obtains a certificate for `hostname`, bounded by `timeoutMs`; throws {@link AcmeError} with the CA's detail. */
export async function obtainCertificate(
  settings: AcmeSettings,
  hostname: string,
  board: ChallengeBoard,
  timeoutMs = 120_000,
): Promise<IssuedCertificate> {
  const acme = await loadAcme();
  acme.axios.defaults.timeout = REQUEST_TIMEOUT_MS;
  acme.axios.defaults.httpsAgent = settings.caPem === undefined
    ? undefined
    : new https.Agent({ ca: settings.caPem });
  const [key, csr] = await acme.crypto.createCsr(
    { commonName: hostname, altNames: [hostname] },
    await acme.crypto.createPrivateEcdsaKey(),
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new AcmeError("unavailable", `the CA did not finish within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
  });
  try {
    const account = await Promise.race([accountOf(settings), timeout]);
    const client = new acme.Client({
      directoryUrl: settings.directoryUrl,
      accountKey: account.key,
      accountUrl: account.url,
      ...ACME_POLLING,
    });
    const pem = await Promise.race([
      client.auto({
        csr,
        email: settings.email,
        termsOfServiceAgreed: true,
        challengePriority: ["http-01"],
        // The answer is served by every Machine once replicated; the CA checks it, not this Machine.
        skipChallengeVerification: true,
        challengeCreateFn: (_authz, challenge, keyAuthorization) =>
          board.publish(hostname, challenge.token, keyAuthorization),
        challengeRemoveFn: (_authz, challenge) => board.withdraw(challenge.token),
      }),
      timeout,
    ]);
    return { pem, key: key.toString() };
  } catch (error) {
    if (error instanceof AcmeError) throw error;
    throw new AcmeError("unavailable", `ACME CA ${settings.directoryUrl}: ${(error as Error).message}`);
  } finally {
    clearTimeout(timer);
  }
}

interface Account {
  directory: string;
  key: string;
  url: string;
}

// One registration per account file and CA at a time: concurrent tasks share it; a failed one is tried again later.
const accounts = new Map<string, Promise<Account>>();

function accountOf(settings: AcmeSettings): Promise<Account> {
  const id = `${settings.accountPath}|${settings.directoryUrl}`;
  let pending = accounts.get(id);
  if (pending === undefined) {
    pending = loadOrRegister(settings);
    accounts.set(id, pending);
    pending.catch(() => accounts.delete(id));
  }
  return pending;
}

// Key and URL are kept together and written only once the CA registered the account: asking a CA again for a
// known key makes acme-client send an empty account update, which CAs may refuse (Pebble does).
async function loadOrRegister(settings: AcmeSettings): Promise<Account> {
  try {
    const saved = JSON.parse(await Deno.readTextFile(settings.accountPath)) as Partial<Account>;
    if (
      saved.directory === settings.directoryUrl && typeof saved.key === "string" &&
      typeof saved.url === "string"
    ) {
      return saved as Account;
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound) && !(error instanceof SyntaxError)) throw error;
  }
  const acme = await loadAcme();
  const key = (await acme.crypto.createPrivateEcdsaKey()).toString();
  const client = new acme.Client({ directoryUrl: settings.directoryUrl, accountKey: key });
  await client.createAccount({
    termsOfServiceAgreed: true,
    ...(settings.email === undefined ? {} : { contact: [`mailto:${settings.email}`] }),
  });
  const account = { directory: settings.directoryUrl, key, url: client.getAccountUrl() };
  await Deno.mkdir(dirname(settings.accountPath), { recursive: true, mode: 0o700 });
  await writeFileAtomic(settings.accountPath, JSON.stringify(account), { mode: 0o600 });
  return account;
}
