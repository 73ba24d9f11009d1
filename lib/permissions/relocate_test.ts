import { deepEqual, throws } from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { layoutFromEnv, permissionFlags, permissionSet, relocate, unionOf } from "./mod.ts";

Deno.test("relocate() rewrites only the default roots, in read, write and unix net scopes", () => {
  const layout = { dataDir: "/t/data", runDir: "/t/run", dockerSocket: "/t/d.sock", dockerRoot: "/t/docker" };
  const set = relocate({
    read: ["/var/lib/ployz", "/var/lib/ployz/observe", "/var/lib/ployzer", "/run/ployz/x.sock", "/proc"],
    write: ["/var/run/docker.sock"],
    net: ["unix:/run/ployz/ployz.sock", "10.210.0.0/16:51000"],
    run: ["ip"],
  }, layout);
  deepEqual(set.read, ["/t/data", "/t/data/observe", "/var/lib/ployzer", "/t/run/x.sock", "/proc"]);
  deepEqual(set.write, ["/t/d.sock"]);
  deepEqual(set.net, ["unix:/t/run/ployz.sock", "10.210.0.0/16:51000"]);
  deepEqual(set.run, ["ip"]);
});

Deno.test("layoutFromEnv() refuses relative paths and '..'", () => {
  deepEqual(layoutFromEnv(() => undefined).dataDir, "/var/lib/ployz");
  deepEqual(layoutFromEnv((k) => (k === "PLOYZ_RUN_DIR" ? "/tmp/r/" : undefined)).runDir, "/tmp/r");
  throws(() => layoutFromEnv((k) => (k === "PLOYZ_DATA_DIR" ? "data" : undefined)), /PLOYZ_DATA_DIR="data"/);
  throws(() => layoutFromEnv((k) => (k === "PLOYZ_DATA_DIR" ? "/a/../etc" : undefined)), /absolute path/);
});

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

Deno.test("permissionFlags() renders sets as deno flags, env ignore included", () => {
  deepEqual(permissionFlags(permissionSet("dns")), [
    `--allow-read=/run/ployz/dns.json,/etc/resolv.conf,${ROOT}cmd,${ROOT}lib`,
    "--allow-net=0.0.0.0/0:53,0.0.0.0:0,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16",
    "--allow-env=PLOYZ_*",
    "--ignore-env",
  ]);
  deepEqual(permissionFlags({ all: true }), ["--allow-all"]);
  throws(() => permissionFlags({ read: ["/a,b"] }), /cannot contain ","/);
});

Deno.test("unionOf() covers every set: lists merge, true wins", () => {
  deepEqual(unionOf([{ read: ["/a"], env: { allow: ["A"], ignore: true } }, { read: ["/b"], net: true }]), {
    read: ["/a", "/b"],
    net: true,
    env: { allow: ["A"], ignore: true },
  });
  deepEqual(unionOf([{ read: ["/a"] }, { read: true }]).read, true);
});

Deno.test("a grant with exceptions renders --deny flags, relocates both halves, and a union keeps the grant", () => {
  const layout = { dataDir: "/t/data", runDir: "/t/run", dockerSocket: "/t/d.sock", dockerRoot: "/t/docker" };
  const set = relocate({
    read: { allow: true, deny: ["/var/lib/ployz/keys", "/etc/shadow"] },
    net: { allow: true, deny: ["unix:/var/run/docker.sock", "10.210.0.0/16"] },
  }, layout);
  deepEqual(set.read, { allow: true, deny: ["/t/data/keys", "/etc/shadow"] });
  deepEqual(permissionFlags(set), [
    "--allow-read",
    "--deny-read=/t/data/keys,/etc/shadow",
    "--allow-net",
    "--deny-net=unix:/t/d.sock,10.210.0.0/16",
  ]);
  deepEqual(unionOf([set, { read: ["/x"] }]).read, true);
});
