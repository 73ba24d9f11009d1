// The web Service the serving tests deploy, as Compose text: busybox httpd on port 80 serving one line as its
// index, health-checked by wget every second (so a Deploy's health gate passes within seconds), stopped within 1 s.
// A probe may take 5 s: on a loaded 2-core host running four labs, Docker's exec of a probe took over 2 s.
import { IMAGE } from "./docker.ts";

/** What varies between the tests' web Services. */
export interface WebService {
  /** The Service's name. */
  name: string;
  /** Its image; the test busybox by default. */
  image?: string;
  /** Shell words echoed into the index; `$$MARK-$$HOSTNAME` by default (`$$` is Compose's escaped `$`). */
  index?: string;
  /** The `MARK` environment variable, when the index names it. */
  mark?: string;
  /** The `deploy` mapping in flow style, such as `{replicas: 2}`. */
  deploy: string;
  /** `x-machines`, when the Service is pinned. */
  machines?: string[];
  /** `x-ports`: the Ingress routes, such as `shop.test:80/http`. */
  ports: string[];
  /** Also serve the CGI `/cgi-bin/slow`, which answers `slow` after 2 s: a request that is long in flight. */
  slowCgi?: boolean;
}

const SLOW_CGI = "mkdir -p /www/cgi-bin && " +
  "printf '#!/bin/sh\\nsleep 2\\necho Content-Type: text/plain\\necho\\necho slow\\n' > /www/cgi-bin/slow && " +
  "chmod +x /www/cgi-bin/slow && ";

/** The Service as the lines of a Compose `services:` entry, indented by two spaces, ending with a newline. */
export function webService(service: WebService): string {
  const index = service.index ?? "$$MARK-$$HOSTNAME";
  const list = (values: string[]): string => `[${values.map((v) => JSON.stringify(v)).join(", ")}]`;
  return [
    `  ${service.name}:`,
    `    image: ${service.image ?? IMAGE}`,
    `    command: ["sh", "-c", ${
      JSON.stringify(
        `${
          service.slowCgi === true ? SLOW_CGI : ""
        }echo ${index} > /www/index.html && exec httpd -f -p 80 -h /www`,
      )
    }]`,
    ...(service.mark === undefined ? [] : [`    environment: {MARK: "${service.mark}"}`]),
    `    deploy: ${service.deploy}`,
    "    stop_grace_period: 1s",
    ...(service.machines === undefined ? [] : [`    x-machines: ${list(service.machines)}`]),
    `    x-ports: ${list(service.ports)}`,
    "    healthcheck:",
    `      test: ["CMD", "wget", "-q", "-O-", "http://127.0.0.1/"]`,
    "      interval: 1s",
    "      timeout: 5s",
    "      retries: 3",
  ].join("\n") + "\n";
}

/**
 * The command of a busybox httpd whose CGI `/cgi-bin/who` answers `<$MARK> <caller address>`, for tests that ask
 * which replica answered and from which address it saw the caller (Compose text: `$$` is Compose's escaped `$`).
 */
export const WHO_COMMAND: readonly string[] = [
  "sh",
  "-c",
  "mkdir -p /www/cgi-bin && echo ok > /www/index.html && " +
  "printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\necho %s $$REMOTE_ADDR\\n' \"$$MARK\" " +
  "> /www/cgi-bin/who && chmod +x /www/cgi-bin/who && exec httpd -f -p 80 -h /www",
];

/**
 * Project `name` with one {@link WHO_COMMAND} Service per Machine: `w<n>` pinned to `m<n>`, answering `MARK=w<n>`,
 * stopped within 1 s, plus what `extra` adds to each Service. As Compose text (YAML is a superset of JSON).
 */
export function whoProject(
  name: string,
  machines: readonly string[],
  extra: (service: string) => Record<string, unknown> = () => ({}),
): string {
  const services = Object.fromEntries(machines.map((m) => {
    const service = `w${m.slice(1)}`;
    return [service, {
      image: IMAGE,
      command: WHO_COMMAND,
      environment: { MARK: service },
      "stop_grace_period": "1s",
      "x-machines": [m],
      ...extra(service),
    }];
  }));
  return JSON.stringify({ name, services }, null, 2) + "\n";
}

/** A Service that only sleeps, with `deploy` in flow style (`{replicas: 3}`, `{mode: global}`), stopped within 1 s. */
export function sleepService(name: string, deploy: string): string {
  return [
    `  ${name}:`,
    `    image: ${IMAGE}`,
    `    command: ["sleep", "3600"]`,
    `    deploy: ${deploy}`,
    "    stop_grace_period: 1s",
  ].join("\n") + "\n";
}
