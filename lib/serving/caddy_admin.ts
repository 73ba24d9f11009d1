/**
 * Caddy's admin API over the unix socket the Ingress Proxy listens on (`<runDir>/caddy/admin.sock`, bind-mounted at
 * `/run/caddy-admin`). Caddy 2.6 refuses any Host outside its `origins`, so every request names the origin
 * `ployz`, which the image's boot config allows.
 *
 * @module
 */

/** The admin block every config Ployz loads keeps, so the socket survives each load. */
export const CADDY_ADMIN_CONFIG: { listen: string; origins: string[] } = Object.freeze({
  listen: "unix//run/caddy-admin/admin.sock",
  origins: ["ployz"],
}) as { listen: string; origins: string[] };

/** Where the admin socket sits inside the Ingress Proxy container. */
export const CADDY_ADMIN_DIR_IN_CONTAINER = "/run/caddy-admin";

/** A Caddy admin API answer that was not 200. */
export class CaddyAdminError extends Error {
  /** HTTP status, or 0 when the socket did not answer. */
  readonly status: number;
  /** Builds the error. */
  constructor(message: string, status: number) {
    super(message);
    this.name = "CaddyAdminError";
    this.status = status;
  }
}

/** The admin calls the loader makes. */
export interface CaddyAdmin {
  /** Adapts a Caddyfile to JSON config (`POST /adapt`). */
  adapt(caddyfile: string): Promise<Record<string, unknown>>;
  /** Replaces the whole config (`POST /load`); Caddy keeps the old one when the new one fails. */
  load(config: Record<string, unknown>): Promise<void>;
  /** Reads the loaded config (`GET /config/`). */
  config(): Promise<unknown>;
  /** Releases the connection pool. */
  close(): void;
}

/** Opens an admin client on the socket path; nothing is sent until the first call. */
export function openCaddyAdmin(socketPath: string, timeoutMs = 10_000): CaddyAdmin {
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: socketPath } });
  async function call(method: string, path: string, body?: string, contentType?: string): Promise<string> {
    let response: Response;
    try {
      response = await fetch(`http://ployz${path}`, {
        method,
        client,
        headers: contentType === undefined ? {} : { "content-type": contentType },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new CaddyAdminError(
        `Caddy admin at "${socketPath}" did not answer ${method} ${path}: ${(error as Error).message}`,
        0,
      );
    }
    const text = await response.text();
    if (response.status !== 200) {
      throw new CaddyAdminError(
        `Caddy admin refused ${method} ${path}: ${response.status}: ${errorText(text)}`,
        response.status,
      );
    }
    return text;
  }
  return {
    async adapt(caddyfile: string): Promise<Record<string, unknown>> {
      const text = await call("POST", "/adapt", caddyfile, "text/caddyfile");
      const parsed = JSON.parse(text) as { result?: Record<string, unknown> };
      if (parsed.result === undefined) {
        throw new CaddyAdminError("Caddy /adapt answered without a result", 200);
      }
      return parsed.result;
    },
    async load(config: Record<string, unknown>): Promise<void> {
      await call("POST", "/load", JSON.stringify(config), "application/json");
    },
    async config(): Promise<unknown> {
      return JSON.parse(await call("GET", "/config/"));
    },
    close(): void {
      client.close();
    },
  };
}

function errorText(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed.error === "string") return parsed.error.trim();
  } catch {
    // Not JSON: fall through to the raw text.
  }
  const trimmed = text.trim();
  return trimmed.length > 500 ? `${trimmed.slice(0, 499)}…` : trimmed;
}
