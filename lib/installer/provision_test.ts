// Provisioning's operator side without a host: the ustar stream against the real `tar`, the probe's parsing and
// refusals (a scripted remote shell stands in for ssh), the install script's quoting, and recorded sources.
import { deepEqual, equal, match, ok, rejects, throws } from "node:assert/strict";
import { join } from "node:path";
import { bundleStream } from "./bundle.ts";
import { InstallError } from "./errors.ts";
import {
  installScript,
  parseProbe,
  ProvisionError,
  provisionHost,
  type ProvisionOptions,
  recordableSource,
  redact,
  tripleFor,
} from "./provision.ts";
import { checkSshDestination, type RemoteResult, type RemoteShell, sshArgs } from "./ssh.ts";
import { tempDir } from "../util/testing/mod.ts";

Deno.test("bundleStream: real tar unpacks every file byte for byte, with its modes", async () => {
  await using tmp = await tempDir("ployz-bundle-test-");
  const dir = tmp.path;
  const big = new Uint8Array(700_001).map((_, i) => (i * 7919) % 251);
  await Deno.writeFile(join(dir, "big.bin"), big);
  await Deno.writeTextFile(join(dir, "small.txt"), "0.1.0\n");
  const bundle = await bundleStream([
    { kind: "file", name: "install.sh", path: join(dir, "small.txt") },
    { kind: "dir", name: "source" },
    { kind: "dir", name: "source/0.1.0" },
    { kind: "file", name: "source/0.1.0/big.bin", path: join(dir, "big.bin") },
  ]);
  const out = join(dir, "out");
  await Deno.mkdir(out);
  const tar = new Deno.Command("tar", { args: ["-xf", "-", "-C", out], stdin: "piped", stderr: "piped" })
    .spawn();
  await bundle.stream.pipeTo(tar.stdin);
  const done = await tar.output();
  equal(done.code, 0, new TextDecoder().decode(done.stderr));
  equal(bundle.sent(), bundle.size);
  equal(bundle.size % 512, 0);
  deepEqual(await Deno.readFile(join(out, "source", "0.1.0", "big.bin")), big);
  equal(await Deno.readTextFile(join(out, "install.sh")), "0.1.0\n");
  equal((await Deno.stat(join(out, "source"))).mode! & 0o777, 0o700);
  equal((await Deno.stat(join(out, "install.sh"))).mode! & 0o777, 0o600);
});

Deno.test("bundleStream refuses names that could leave the directory", async () => {
  await rejects(() =>
    bundleStream([{ kind: "dir", name: "../x" }]).then((b) => b.stream.pipeTo(new WritableStream()))
  );
  await rejects(() =>
    bundleStream([{ kind: "dir", name: "/abs" }]).then((b) => b.stream.pipeTo(new WritableStream()))
  );
});

Deno.test("parseProbe reads the host, its triple and an installed ployzd", () => {
  const probe = parseProbe(
    [
      "os=Linux",
      "arch=aarch64",
      "uid=1000",
      "sudo=yes",
      "missing=gzip",
      "ployzd=/usr/local/bin/ployzd",
      'ployzd_version_json={"version":"0.3.1","deno":"2"}',
      "probe=done",
    ].join("\n"),
  );
  deepEqual(probe, {
    os: "Linux",
    arch: "aarch64",
    triple: "aarch64-unknown-linux-gnu",
    uid: 1000,
    sudo: true,
    missing: ["gzip"],
    ployzd: { path: "/usr/local/bin/ployzd", version: "0.3.1" },
  });
  equal(parseProbe("os=Linux\nuid=0\n"), undefined, "an unfinished probe is no answer");
  equal(tripleFor("amd64"), "x86_64-unknown-linux-gnu");
  equal(tripleFor("armv7l"), undefined);
});

/** A remote shell that answers the probe with `lines` and records every other script. */
function scripted(lines: string[], code = 0): RemoteShell & { scripts: string[] } {
  const scripts: string[] = [];
  return {
    label: "op@host",
    scripts,
    run(script): Promise<RemoteResult> {
      scripts.push(script);
      return Promise.resolve({ code, stdout: lines.join("\n") + "\n", stderr: "", timedOut: false });
    },
  };
}

const OPTIONS: Omit<ProvisionOptions, "shell"> = {
  source: "/nonexistent-release-source",
  target: { fallback: "0.1.0" },
  prerequisites: "auto",
  install: true,
};

async function refusal(shell: RemoteShell, extra: Partial<ProvisionOptions> = {}): Promise<ProvisionError> {
  try {
    await provisionHost({ ...OPTIONS, ...extra, shell });
  } catch (error) {
    ok(error instanceof ProvisionError, String(error));
    return error;
  }
  throw new Error("provisionHost did not refuse");
}

Deno.test("provisionHost refuses at the probe: ssh failure, not Linux, no release, not root, missing tools", async () => {
  const unreachable: RemoteShell = {
    label: "root@gone",
    run: () =>
      Promise.resolve({
        code: 255,
        stdout: "",
        stderr: "ssh: connect to host gone port 22: Connection refused\n",
        timedOut: false,
      }),
  };
  let e = await refusal(unreachable);
  equal(e.stage, "probe");
  equal(e.code, "unavailable");
  match(
    e.message,
    /Cannot reach "root@gone" over SSH: ssh: connect to host gone port 22: Connection refused/,
  );

  e = await refusal(scripted(["os=Darwin", "arch=arm64", "uid=0", "probe=done"]));
  equal(e.code, "unsupported");
  match(e.message, /it runs "Darwin"; Machines run Linux/);

  e = await refusal(scripted(["os=Linux", "arch=armv7l", "uid=0", "probe=done"]));
  equal(e.code, "unsupported");
  match(e.message, /architecture "armv7l" has no release/);

  const noSudo = scripted(["os=Linux", "arch=x86_64", "uid=1000", "sudo=no", "probe=done"]);
  e = await refusal(noSudo);
  equal(e.code, "invalid_argument");
  match(e.message, /not root \(uid 1000\) and "sudo -n" is not allowed/);
  equal(noSudo.scripts.length, 1, "nothing but the probe ran");

  e = await refusal(scripted(["os=Linux", "arch=x86_64", "uid=0", "missing=sha256sum", "probe=done"]));
  equal(e.code, "unsupported");
  match(e.message, /lacks "sha256sum"/);

  e = await refusal(scripted(["os=Linux", "arch=x86_64", "uid=0", "probe=done"]), { install: false });
  equal(e.code, "not_found");
  match(e.message, /no ployzd, and installing was turned off/);

  e = await refusal(scripted(["garbage"], 2));
  equal(e.code, "unavailable");
  match(e.message, /the probe exited 2 without an answer; the host said: garbage/);
});

Deno.test("provisionHost leaves an installed ployzd alone: same version skipped, another kept or refused", async () => {
  const host = (version: string): RemoteShell =>
    scripted([
      "os=Linux",
      "arch=x86_64",
      "uid=0",
      "ployzd=/usr/local/bin/ployzd",
      `ployzd_version_json={"version":"${version}"}`,
      "probe=done",
    ]);
  const lines: string[] = [];
  const same = await provisionHost({
    ...OPTIONS,
    shell: host("0.1.0"),
    progress: (s, l) => lines.push(`${s}: ${l}`),
  });
  equal(same.action, "already_installed");
  equal(same.bytesSent, 0);
  ok(lines.some((l) => /^install: skipped: ployzd 0\.1\.0 is already installed/.test(l)), lines.join("\n"));
  const other = await provisionHost({ ...OPTIONS, shell: host("0.0.9") });
  equal(other.action, "kept_installed");
  equal(other.version, "0.0.9");
  const e = await refusal(host("0.0.9"), { target: { version: "0.1.0", fallback: "0.1.0" } });
  equal(e.code, "conflict");
  match(e.message, /already runs ployzd 0\.0\.9; "ployz machine upgrade" changes/);
});

Deno.test("the install script quotes everything and removes its directory", () => {
  const script = installScript({
    dir: "/tmp/ployz-provision.AbC123",
    release: { version: "0.1.0", channel: "beta", artifact: "a", sha256: "x", dir: "/local" },
    recordSource: "https://example.test/releases",
    prerequisites: "skip",
    sudo: true,
  });
  match(script, /^d='\/tmp\/ployz-provision\.AbC123'$/m);
  match(script, /^trap 'rm -rf "\$d"' EXIT$/m);
  match(
    script,
    /^sudo -n env PLOYZ_RELEASE_SOURCE="\$d\/source" sh "\$d\/install\.sh" '--version' '0\.1\.0' '--channel' 'beta' '--record-source' 'https:\/\/example\.test\/releases' '--skip-prerequisites'$/m,
  );
  throws(() =>
    installScript({
      dir: "/tmp/x; rm -rf /",
      release: { version: "0.1.0", artifact: "a", sha256: "x", dir: "/l" },
      recordSource: "none",
      prerequisites: "auto",
      sudo: false,
    })
  );
});

Deno.test("recorded sources drop credentials; a directory records none; ssh options are explicit", () => {
  equal(
    recordableSource("https://user:secret@releases.example.test/base/?t=1"),
    "https://releases.example.test/base",
  );
  equal(recordableSource("/srv/releases"), "none");
  equal(
    redact('Cannot fetch "https://user:secret@releases.example.test/0.1.0/SHA256SUMS": refused'),
    'Cannot fetch "https://releases.example.test/0.1.0/SHA256SUMS": refused',
  );
  const args = sshArgs("root@10.0.0.5", "echo hi", { configFile: "/tmp/ssh_config" });
  deepEqual(args.slice(0, 2), ["-F", "/tmp/ssh_config"]);
  ok(args.includes("BatchMode=yes"));
  ok(args.some((a) => a.startsWith("ConnectTimeout=")));
  deepEqual(args.slice(-3), ["--", "root@10.0.0.5", "sh -c 'echo hi'"]);
  throws(() => checkSshDestination("-oProxyCommand=x"), InstallError);
  throws(() => checkSshDestination("root@host;id"), InstallError);
});
