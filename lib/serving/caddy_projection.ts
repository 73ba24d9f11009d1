/**
 * The Caddy projection: replicated rows → a Caddyfile. Pure and deterministic, with no
 * timestamp, so an unchanged Cluster projects the same text and the loader can skip a reload.
 *
 * - One site per explicit ingress hostname and protocol (`http://host:port`), reverse-proxying to the serving
 *   containers of the Service that owns the hostname, on every Machine, by container address and container port.
 *   A site with nothing serving answers 502. A hostname claimed by two Services goes to the first by
 *   `project/service` and the other claim is reported. Routes without an explicit hostname are reported and
 *   skipped.
 * - An `https` route is served (`https://host[:port]`) once a usable certificate for its hostname is given; its
 *   certificate and key travel beside the Caddyfile ({@link CaddyProjection.tls}) and are loaded through the admin
 *   API, never written to a file. Port 80 of that hostname redirects to https. Until then the route is reported
 *   as waiting for its certificate.
 * - Every port-80 site answers each ACME HTTP-01 challenge row at `/.well-known/acme-challenge/<token>`, so the
 *   CA may ask any Machine.
 * - A catch-all `http://` site answers `/.ployz/machine` with this Machine's id and 404 otherwise.
 * - Each Service's `x-caddy` fragment (from its newest serving container) is rendered with the template
 *   helpers `{{.Name}}`, `{{upstreams}}`, `{{upstreams PORT}}`, `{{upstreams SERVICE}}` and
 *   `{{upstreams SERVICE PORT}}`; the loader validates each one and skips the bad ones.
 *
 * @module
 */

import type { AcmeChallenge, Container, ServingPointer } from "../store/mod.ts";
import { acmeUnreachable, hostnameProblem, type UsableCertificate } from "./certificates.ts";
import { caddyFragment, ingressRoutes } from "./labels.ts";
import { compare, type ServiceGroup, type ServingContext, servingGroups } from "./serving_set.ts";

/** A rendered `x-caddy` fragment of one Service. */
export interface CaddyFragment {
  /** `project/service`. */
  service: string;
  /** Caddyfile text. */
  text: string;
}

/** A problem with one Service's routes; the rest of the projection stands. */
export interface ServingProblem {
  /** `project/service`. */
  service: string;
  /** What is wrong. */
  message: string;
}

/** The projection the loader sends to Caddy. */
export interface CaddyProjection {
  /** Caddyfile without user fragments. */
  base: string;
  /** Rendered `x-caddy` fragments, by Service. */
  fragments: CaddyFragment[];
  /** Services whose routes or fragments could not be projected. */
  problems: ServingProblem[];
  /** Every `address:port` the projection proxies to, sorted. */
  upstreams: string[];
  /** Pointer key → Deployment, for every pointer the projection honoured. */
  pointers: Record<string, string>;
  /** Certificates the https sites need loaded, by hostname. */
  tls: UsableCertificate[];
  /** Hostnames of every valid https route, whether or not a certificate exists yet; sorted. */
  httpsHostnames: string[];
  /** Tokens of the ACME answers the port-80 sites serve. */
  answered: string[];
}

/** What {@link projectCaddy} needs besides rows. */
export interface CaddyProjectionOptions extends ServingContext {
  /** This Machine's id, answered on `/.ployz/machine`. */
  machineId: string;
  /** Usable certificates, by hostname. */
  certificates?: ReadonlyMap<string, UsableCertificate>;
  /** ACME HTTP-01 answers to serve on port 80. */
  challenges?: readonly AcmeChallenge[];
  /** Now, for challenge expiry; default the clock. */
  now?: Date;
}

interface Site {
  protocol: "http" | "https";
  hostname: string;
  port: number;
  upstreams: string[];
}

/** Projects rows onto a Caddyfile and the `x-caddy` fragments to validate. */
export function projectCaddy(
  containers: readonly Container[],
  pointers: readonly ServingPointer[],
  options: CaddyProjectionOptions,
): CaddyProjection {
  const groups = servingGroups(containers, pointers, options);
  const problems: ServingProblem[] = [];
  const owners = new Map<string, string>();
  const sites = new Map<string, Site>();
  const all = new Set<string>();
  const https = new Set<string>();
  const tls = new Map<string, UsableCertificate>();
  for (const group of groups) {
    const declaring = newestFirst(group.serving.length > 0 ? group.serving : group.containers);
    const routes = declaring.length === 0 ? [] : ingressRoutes(declaring[0]);
    for (const route of routes) {
      if (route.hostname === null || !route.hostname.includes(".")) {
        problems.push({
          service: group.key,
          message: `ingress port ${route.containerPort}/${route.protocol} has no explicit hostname; skipped`,
        });
        continue;
      }
      if (route.protocol === "https") {
        const problem = hostnameProblem(route.hostname);
        if (problem !== null) {
          problems.push({ service: group.key, message: `ingress ${problem}; skipped` });
          continue;
        }
        https.add(route.hostname);
        const cert = options.certificates?.get(route.hostname);
        if (cert === undefined) {
          problems.push({
            service: group.key,
            message: acmeUnreachable(route.hostname)
              ? `ingress "${route.hostname}" is https and waits for its certificate from the Cluster's ` +
                "internal root"
              : `ingress "${route.hostname}" is https and waits for its certificate`,
          });
          continue;
        }
        tls.set(route.hostname, cert);
      }
      const owner = owners.get(route.hostname);
      if (owner !== undefined && owner !== group.key) {
        problems.push({
          service: group.key,
          message: `hostname "${route.hostname}" is already routed to Service "${owner}"; skipped`,
        });
        continue;
      }
      owners.set(route.hostname, group.key);
      const siteKey = `${route.protocol}://${route.hostname}:${route.loadBalancerPort}`;
      let site = sites.get(siteKey);
      if (site === undefined) {
        site = {
          protocol: route.protocol,
          hostname: route.hostname,
          port: route.loadBalancerPort,
          upstreams: [],
        };
        sites.set(siteKey, site);
      }
      for (const row of group.serving) {
        const upstream = `${(row.addresses ?? [])[0]}:${route.containerPort}`;
        if (!site.upstreams.includes(upstream)) site.upstreams.push(upstream);
        all.add(upstream);
      }
    }
  }
  const fragments: CaddyFragment[] = [];
  for (const group of groups) {
    const newest = newestFirst(group.serving)[0];
    const template = newest === undefined ? undefined : caddyFragment(newest);
    if (template === undefined) continue;
    try {
      const rendered = renderTemplate(template, group, groups);
      for (const u of rendered.upstreams) all.add(u);
      fragments.push({ service: group.key, text: rendered.text });
    } catch (error) {
      problems.push({ service: group.key, message: `x-caddy: ${(error as Error).message}` });
    }
  }
  const served = answers(options);
  const pointerMap: Record<string, string> = {};
  for (const p of pointers) pointerMap[`${p.project}/${p.service}`] = p.deployment;
  return {
    base: renderBase(options.machineId, [...sites.values()], served),
    fragments,
    problems,
    upstreams: [...all].sort(compare),
    pointers: pointerMap,
    tls: [...tls.values()].sort((a, b) => compare(a.hostname, b.hostname)),
    httpsHostnames: [...https].sort(compare),
    answered: served.map(([token]) => token),
  };
}

const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;
const KEY_AUTHORIZATION = /^[A-Za-z0-9_-]{1,256}\.[A-Za-z0-9_-]{1,256}$/;

// Rows from other Machines are untrusted: only the token and answer shapes ACME defines reach the Caddyfile.
function answers(options: CaddyProjectionOptions): [string, string][] {
  const now = (options.now ?? new Date()).getTime();
  const out: [string, string][] = [];
  for (const c of options.challenges ?? []) {
    if (!TOKEN.test(c.token) || !KEY_AUTHORIZATION.test(c.key_authorization)) continue;
    const expires = typeof c.expires_at === "string" ? Date.parse(c.expires_at) : NaN;
    if (Number.isFinite(expires) && expires < now) continue;
    out.push([c.token, c.key_authorization]);
  }
  return out.sort((a, b) => compare(a[0], b[0]));
}

function renderBase(machineId: string, sites: Site[], challenges: [string, string][]): string {
  const acme = challenges.map(([token, answer]) =>
    `\trespond /.well-known/acme-challenge/${token} "${answer}" 200`
  );
  const lines = [
    "{",
    "\tauto_https off",
    "}",
    "",
    "http:// {",
    `\trespond /.ployz/machine "${machineId}" 200`,
    ...acme,
    '\trespond "Not Found" 404',
    "}",
  ];
  const sorted = [...sites].sort((a, b) =>
    compare(a.hostname, b.hostname) || a.port - b.port || compare(a.protocol, b.protocol)
  );
  const plain80 = new Set(
    sorted.filter((s) => s.protocol === "http" && s.port === 80).map((s) => s.hostname),
  );
  const redirects = [...new Set(sorted.filter((s) => s.protocol === "https").map((s) => s.hostname))]
    .filter((h) => !plain80.has(h));
  for (const hostname of redirects) {
    lines.push("", `http://${hostname} {`, "\t@https not path /.well-known/acme-challenge/*", ...acme);
    lines.push("\tredir @https https://{host}{uri} 308", "}");
  }
  for (const site of sorted) {
    const standard = site.protocol === "http" ? 80 : 443;
    const address = site.port === standard
      ? `${site.protocol}://${site.hostname}`
      : `${site.protocol}://${site.hostname}:${site.port}`;
    lines.push("", `${address} {`);
    if (site.protocol === "http" && site.port === 80) lines.push(...acme);
    if (site.upstreams.length === 0) lines.push('\trespond "Bad Gateway" 502');
    else {
      lines.push(`\treverse_proxy ${[...site.upstreams].sort(compare).join(" ")} {`);
      lines.push("\t\tlb_policy round_robin", "\t}");
    }
    lines.push("}");
  }
  return lines.join("\n") + "\n";
}

function newestFirst(rows: readonly Container[]): Container[] {
  const created = (r: Container): string => typeof r.created_at === "string" ? r.created_at : "";
  return [...rows].sort((a, b) => compare(created(b), created(a)) || compare(b.id, a.id));
}

/** Renders the `x-caddy` template helpers; throws on an unknown helper or Service. */
export function renderTemplate(
  template: string,
  current: ServiceGroup,
  groups: readonly ServiceGroup[],
): { text: string; upstreams: string[] } {
  const used: string[] = [];
  let out = "";
  let rest = template;
  for (;;) {
    const start = rest.indexOf("{{");
    if (start < 0) break;
    out += rest.slice(0, start);
    const end = rest.indexOf("}}", start + 2);
    if (end < 0) throw new Error("unclosed template expression");
    const expression = rest.slice(start + 2, end).trim();
    const tokens = expression.split(/\s+/).filter((t) => t !== "");
    out += helper(tokens, expression, current, groups, used);
    rest = rest.slice(end + 2);
  }
  return { text: out + rest, upstreams: used };
}

function helper(
  tokens: string[],
  expression: string,
  current: ServiceGroup,
  groups: readonly ServiceGroup[],
  used: string[],
): string {
  if (tokens.length === 1 && tokens[0] === ".Name") return current.key;
  if (tokens[0] !== "upstreams" || tokens.length > 3) {
    throw new Error(`unsupported template expression "{{${expression}}}"`);
  }
  let target = current;
  let port: number | undefined;
  const args = tokens.slice(1);
  if (args.length === 2 || (args.length === 1 && !/^\d+$/.test(args[0]))) {
    const name = args[0];
    if (name !== ".Name") {
      const key = name.includes("/") ? name : `${current.project}/${name}`;
      const found = groups.find((g) => g.key === key);
      if (found === undefined) throw new Error(`Service "${name}" was not found`);
      target = found;
    }
  }
  const portText = args.length === 2
    ? args[1]
    : args.length === 1 && /^\d+$/.test(args[0])
    ? args[0]
    : undefined;
  if (portText !== undefined) {
    port = Number(portText);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new Error(`invalid upstream port "${portText}"`);
    }
  }
  const list = target.serving.map((row) => {
    const address = (row.addresses ?? [])[0];
    return port === undefined ? address : `${address}:${port}`;
  });
  for (const u of list) if (port !== undefined) used.push(u);
  return list.join(" ");
}
