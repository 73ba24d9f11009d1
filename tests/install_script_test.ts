// install.sh on its own, with real sh, openssl, sha256sum and tar, against a local release source holding a stub
// release tree, and with stub curl/id on PATH (no network): a truncated download runs nothing; SHA256SUMS must be
// signed by the release key before anything is unpacked; https is fetched over TLS 1.2+ only; no error prints a
// source URL's credentials.
import { deepEqual, doesNotMatch, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { publicKeyOf, signSums } from "../lib/installer/mod.ts";
import { TEST_RELEASE_PUBLIC_KEY, TEST_RELEASE_SECRET_KEY } from "../tools/release_test_key.ts";
import { ROOT } from "./support/spawn.ts";

const VERSION = "0.9.0";
const TRIPLE = Deno.build.arch === "aarch64" ? "aarch64-unknown-linux-gnu" : "x86_64-unknown-linux-gnu";
const ARTIFACT = `ployz-${VERSION}-${TRIPLE}.tar.gz`;
const SCRIPT = Deno.readTextFileSync(join(ROOT, "install.sh"));
const fromBase64 = (text: string): Uint8Array => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

interface Bench {
  root: string;
  source: string;
  /** Commands the stubs saw, one line each: `name args…`. */
  calls(): string[];
  run(args: string[], env?: Record<string, string>, script?: string): Promise<{ code: number; out: string }>;
}

/** Stubs log their call, then run the real command (curl and id never do). */
async function bench(): Promise<Bench> {
  const root = await Deno.makeTempDir({ prefix: "ployz-install-sh-" });
  const stubs = join(root, "stubs");
  await Deno.mkdir(stubs);
  const log = join(root, "calls.log");
  await Deno.writeTextFile(log, "");
  for (const name of ["tar", "sha256sum", "openssl", "mktemp", "uname", "awk", "cp"]) {
    await Deno.writeTextFile(
      join(stubs, name),
      `#!/bin/sh\necho "${name} $*" >>'${log}'\nPATH=/usr/bin:/bin exec ${name} "$@"\n`,
      { mode: 0o755 },
    );
  }
  await Deno.writeTextFile(join(stubs, "id"), `#!/bin/sh\necho "id $*" >>'${log}'\necho 0\n`, {
    mode: 0o755,
  });
  // A curl that fails the way curl does, echoing the URL it was given.
  await Deno.writeTextFile(
    join(stubs, "curl"),
    `#!/bin/sh\necho "curl $*" >>'${log}'\nfor a; do u=$a; done\necho "curl: (6) Could not resolve host for $u" >&2\nexit 6\n`,
    { mode: 0o755 },
  );
  const source = join(root, "releases");
  const tree = join(root, "build", `ployz-${VERSION}-${TRIPLE}`);
  await Deno.mkdir(join(tree, "bin"), { recursive: true });
  await Deno.writeTextFile(
    join(tree, "bin", "ployzd"),
    `#!/bin/sh\necho "ployzd $*" >>'${log}'\n`,
    { mode: 0o755 },
  );
  await Deno.mkdir(join(source, VERSION), { recursive: true });
  await run0("tar", [
    "-czf",
    join(source, VERSION, ARTIFACT),
    "-C",
    join(root, "build"),
    `ployz-${VERSION}-${TRIPLE}`,
  ]);
  const digest = (await run0("sha256sum", [join(source, VERSION, ARTIFACT)])).split(" ")[0];
  const sums = new TextEncoder().encode(`${digest}  ${ARTIFACT}\n`);
  await Deno.writeFile(join(source, VERSION, "SHA256SUMS"), sums);
  await Deno.writeTextFile(
    join(source, VERSION, "SHA256SUMS.sig"),
    signSums(sums, fromBase64(TEST_RELEASE_SECRET_KEY)),
  );
  return {
    root,
    source,
    calls: () => Deno.readTextFileSync(log).split("\n").filter((l) => l !== ""),
    async run(args, env = {}, script = join(ROOT, "install.sh")) {
      await Deno.writeTextFile(log, "");
      const out = await new Deno.Command("sh", {
        args: [script, ...args],
        env: {
          PATH: `${stubs}:/usr/bin:/bin`,
          TMPDIR: root,
          PLOYZ_RELEASE_SOURCE: source,
          PLOYZ_RELEASE_PUBLIC_KEY: TEST_RELEASE_PUBLIC_KEY,
          ...env,
        },
        clearEnv: true,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder();
      return { code: out.code, out: text.decode(out.stdout) + text.decode(out.stderr) };
    },
  };
}

async function run0(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) throw new Error(`${cmd} failed: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

Deno.test("install.sh verifies the release key's signature of SHA256SUMS before unpacking anything", async (t) => {
  const b = await bench();
  try {
    const sumsPath = join(b.source, VERSION, "SHA256SUMS");
    const good = await Deno.readFile(sumsPath);
    await t.step("a signed release installs", async () => {
      const r = await b.run(["--version", VERSION, "--skip-prerequisites"]);
      equal(r.code, 0, r.out);
      ok(b.calls().some((c) => c.startsWith("tar -xzf")), b.calls().join("\n"));
      ok(b.calls().some((c) => c.startsWith(`ployzd install --from`)), b.calls().join("\n"));
    });
    const refusals: [string, () => Promise<{ code: number; out: string }>, RegExp][] = [
      ["tampered SHA256SUMS", async () => {
        // A consistent swap: the artifact and its sum both replaced, the signature left as it was.
        await Deno.writeFile(join(b.source, VERSION, ARTIFACT), new TextEncoder().encode("evil"));
        const digest = (await run0("sha256sum", [join(b.source, VERSION, ARTIFACT)])).split(" ")[0];
        await Deno.writeTextFile(sumsPath, `${digest}  ${ARTIFACT}\n`);
        return await b.run(["--version", VERSION]);
      }, /SHA256SUMS of release 0\.9\.0 is not signed by the release key: refusing to install it/],
      ["a wrong key", async () => {
        const other = publicKeyOf(crypto.getRandomValues(new Uint8Array(32)));
        return await b.run(["--version", VERSION], { PLOYZ_RELEASE_PUBLIC_KEY: other });
      }, /not signed by the release key/],
      ["the built-in key (the release was signed with the test key)", async () => {
        return await b.run(["--version", VERSION], { PLOYZ_RELEASE_PUBLIC_KEY: "" });
      }, /not signed by the release key/],
      ["a missing signature", async () => {
        await Deno.remove(join(b.source, VERSION, "SHA256SUMS.sig"));
        return await b.run(["--version", VERSION]);
      }, /cannot fetch "0\.9\.0\/SHA256SUMS\.sig"/],
      ["a test key with an https source", async () => {
        return await b.run(["--version", VERSION], { PLOYZ_RELEASE_SOURCE: "https://releases.invalid" });
      }, /PLOYZ_RELEASE_PUBLIC_KEY is honoured only with an http:\/\/ or local test source/],
    ];
    for (const [what, attempt, refusal] of refusals) {
      await t.step(`refused before unpacking: ${what}`, async () => {
        const started = performance.now();
        const r = await attempt();
        const ms = performance.now() - started;
        console.log(`${what}: refused in ${ms.toFixed(0)} ms`);
        equal(r.code, 1, r.out);
        match(r.out, refusal);
        deepEqual(b.calls().filter((c) => /^(tar|ployzd) /.test(c)), [], "nothing was unpacked or run");
      });
      if (what === "tampered SHA256SUMS") {
        await Deno.writeFile(sumsPath, good);
      }
    }
  } finally {
    await Deno.remove(b.root, { recursive: true });
  }
});

Deno.test("install.sh cut short at any line runs nothing", async () => {
  const b = await bench();
  try {
    const lines = SCRIPT.split("\n");
    let syntaxErrors = 0;
    for (let n = 1; n < lines.length - 1; n++) {
      const cut = join(b.root, "cut.sh");
      // Also cut mid-line: half of the next line.
      const partial = lines[n].slice(0, Math.floor(lines[n].length / 2));
      await Deno.writeTextFile(cut, lines.slice(0, n).join("\n") + "\n" + partial);
      const r = await b.run(["--version", VERSION], {}, cut);
      deepEqual(b.calls(), [], `cut at line ${n + 1}: ${r.out}`);
      if (r.code !== 0) syntaxErrors++;
    }
    ok(syntaxErrors > 0, "some cuts fail to parse, and none ran anything");
  } finally {
    await Deno.remove(b.root, { recursive: true });
  }
});

Deno.test("install.sh fetches https over TLS 1.2+ only and never prints a source's credentials", async () => {
  const b = await bench();
  try {
    const secured = await b.run(["--version", VERSION], {
      PLOYZ_RELEASE_SOURCE: "https://user:s3cret-token@releases.invalid/ployz",
      PLOYZ_RELEASE_PUBLIC_KEY: "",
    });
    equal(secured.code, 1);
    const curl = b.calls().find((c) => c.startsWith("curl "));
    ok(curl, b.calls().join("\n"));
    match(curl, /--proto =https --proto-redir =https --tlsv1\.2 /);
    doesNotMatch(secured.out, /s3cret-token/);
    match(secured.out, /cannot fetch "0\.9\.0\/SHA256SUMS" from "https:\/\/\*\*\*@releases\.invalid\/ployz"/);

    const plain = await b.run(["--version", VERSION], { PLOYZ_RELEASE_SOURCE: "http://127.0.0.1:9/ployz" });
    equal(plain.code, 1);
    const plainCurl = b.calls().find((c) => c.startsWith("curl "));
    ok(plainCurl);
    doesNotMatch(plainCurl, /--proto/);
  } finally {
    await Deno.remove(b.root, { recursive: true });
  }
});
