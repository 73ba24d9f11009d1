import { deepEqual, equal, throws } from "node:assert/strict";
import fc from "fast-check";
import { checkContextName, chooseConnection, formatConnectUrl, parseConnectUrl } from "./context.ts";
import { OperatorError } from "./errors.ts";

const SAVED: Record<string, string> = {
  prod: "ssh://root@192.0.2.10:2222",
  lab: "unix:///tmp/lab/m1/run/ployz.sock",
  staging: "ssh://deploy@staging.example.org",
};
const lookup = (name: string): string | undefined => SAVED[name];
const base = { lookup, defaultSocket: "/run/ployz/ployz.sock" };

Deno.test("connection precedence: --connect, --context, PLOYZ_CONTEXT, x-context, context use, the local socket", () => {
  const all = {
    ...base,
    connectFlag: "ssh://ops@192.0.2.99",
    contextFlag: "prod",
    envContext: "staging",
    composeContext: "lab",
    currentContext: "lab",
  };
  deepEqual(chooseConnection(all), {
    source: "--connect",
    url: "ssh://ops@192.0.2.99",
    target: { kind: "ssh", user: "ops", host: "192.0.2.99" },
  });
  const { connectFlag: _c, ...noConnect } = all;
  equal(chooseConnection(noConnect).source, "--context");
  equal(chooseConnection(noConnect).context, "prod");
  const { contextFlag: _f, ...noFlag } = noConnect;
  equal(chooseConnection(noFlag).context, "staging");
  equal(chooseConnection(noFlag).source, "PLOYZ_CONTEXT");
  const { envContext: _e, ...noEnv } = noFlag;
  deepEqual([chooseConnection(noEnv).source, chooseConnection(noEnv).context], ["x-context", "lab"]);
  equal(chooseConnection({ ...base, currentContext: "staging" }).source, "context use");
  deepEqual(chooseConnection({ ...base, envContext: "", currentContext: "" }), {
    source: "default",
    url: "unix:///run/ployz/ployz.sock",
    target: { kind: "unix", path: "/run/ployz/ployz.sock" },
  });
});

Deno.test("an unknown context is not_found naming it and where it came from, even when a weaker one exists", () => {
  const error = (() => {
    try {
      chooseConnection({ ...base, envContext: "nope", currentContext: "prod" });
    } catch (e) {
      return e;
    }
  })() as OperatorError;
  equal(error.code, "not_found");
  equal(
    error.message,
    'Unknown context "nope" (from PLOYZ_CONTEXT): "ployz context ls" lists the saved ones, "ployz context add" saves one',
  );
});

Deno.test("connection URLs: ssh with user, port and IPv6; unix sockets; malformed ones refused with the reason", () => {
  deepEqual(parseConnectUrl("ssh://h"), { kind: "ssh", host: "h" });
  deepEqual(parseConnectUrl("ssh://root@m1.example:22/"), {
    kind: "ssh",
    user: "root",
    host: "m1.example",
    port: 22,
  });
  deepEqual(parseConnectUrl("ssh://[2001:db8::1]:2222"), { kind: "ssh", host: "2001:db8::1", port: 2222 });
  deepEqual(parseConnectUrl("unix:///run/ployz/ployz.sock"), { kind: "unix", path: "/run/ployz/ployz.sock" });
  const refused: [string, RegExp][] = [
    ["http://h", /the scheme must be ssh or unix/],
    ["ssh://", /invalid host ""/],
    ["ssh://h:0", /invalid port "0"/],
    ["ssh://h:70000", /invalid port "70000"/],
    ["ssh://h:22x", /invalid port "22x"/],
    ["ssh://-oProxyCommand=x", /invalid host/],
    ["ssh://a b", /no path, query or spaces/],
    ["ssh://h/path", /no path, query or spaces/],
    ["ssh://;rm@h", /invalid user ";rm"/],
    ["unix://relative.sock", /must be absolute/],
    [`unix:///${"x".repeat(120)}`, /longer than 107 bytes/],
    ["root@host", /the scheme must be ssh or unix/],
  ];
  for (const [text, why] of refused) {
    throws(() => parseConnectUrl(text), (e: unknown) => {
      equal((e as OperatorError).code, "invalid_argument", text);
      return why.test((e as Error).message) && (e as Error).message.includes("expected ssh://");
    }, text);
  }
});

Deno.test("formatConnectUrl round-trips every URL parseConnectUrl accepts", () => {
  const host = fc.oneof(
    fc.domain(),
    fc.ipV4(),
    fc.ipV6().map((h) => `[${h}]`),
  );
  fc.assert(fc.property(
    fc.option(fc.stringMatching(/^[a-z_][a-z0-9._-]{0,10}$/), { nil: undefined }),
    host,
    fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
    (user, h, port) => {
      const url = `ssh://${user === undefined ? "" : `${user}@`}${h}${port === undefined ? "" : `:${port}`}`;
      let parsed;
      try {
        parsed = parseConnectUrl(url);
      } catch {
        return true; // fast-check's domains may exceed what a hostname allows; refusing is fine
      }
      deepEqual(parseConnectUrl(formatConnectUrl(parsed)), parsed);
      return true;
    },
  ));
});

Deno.test("context names: letters, digits, dot, dash, underscore; nothing that could become a path or an option", () => {
  equal(checkContextName("prod-eu.1"), "prod-eu.1");
  for (const bad of ["", "-x", "a/b", "..", "a b", "x".repeat(64)]) {
    throws(() => checkContextName(bad), /Invalid context name/);
  }
});
