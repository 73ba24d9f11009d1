import { equal, match } from "node:assert/strict";
import { chooseConnection } from "./context.ts";
import type { RpcError } from "../rpc/mod.ts";
import { openConnection, sshFailure } from "./connection.ts";
import type { OperatorError } from "./errors.ts";
import { tempDir } from "../util/testing/mod.ts";

const choice = chooseConnection({
  contextFlag: "prod",
  lookup: () => "ssh://ops@192.0.2.10:2222",
  defaultSocket: "/run/ployz/ployz.sock",
});

Deno.test("ssh failures become one line naming the context and host, with the way out", () => {
  const cases: [string, number, string, RegExp][] = [
    [
      "Host key verification failed.",
      255,
      "unauthenticated",
      /host key of "192\.0\.2\.10" is not trusted.*ssh-keyscan -p 2222 192\.0\.2\.10/,
    ],
    [
      "@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nHost key verification failed.",
      255,
      "unauthenticated",
      /changed since it was trusted.*ssh-keygen -R/,
    ],
    [
      "ops@192.0.2.10: Permission denied (publickey).",
      255,
      "unauthenticated",
      /refused the login of user "ops"/,
    ],
    [
      "ssh: connect to host 192.0.2.10 port 2222: Connection refused",
      255,
      "unavailable",
      /"192\.0\.2\.10" is unreachable: ssh: connect to host 192\.0\.2\.10 port 2222: Connection refused/,
    ],
    ["sh: 1: exec: ployzd: not found", 127, "not_found", /"ployzd" is not installed on "192\.0\.2\.10"/],
    [
      'error[unavailable]: Cannot connect to the Machine RPC socket "/run/ployz/ployz.sock": No such file',
      1,
      "unavailable",
      /ployzd on "192\.0\.2\.10" is not serving: Cannot connect.*is "ployzd serve" running there/,
    ],
    ["", 3, "unavailable", /ssh exited with 3/],
    [
      'error[invalid_argument]: Unknown option "--mux" for "ployzd dial-stdio"\n\nUsage: ployzd dial-stdio\n      --help  Show this help',
      2,
      "unsupported",
      /ployzd on "192\.0\.2\.10" is older than this CLI/,
    ],
  ];
  for (const [stderr, code, want, message] of cases) {
    const error = sshFailure(choice, stderr, code);
    equal(error.code, want, stderr);
    match(error.message, /^Cannot connect to context "prod" \(ops@192\.0\.2\.10:2222\): /);
    match(error.message, message);
    equal(error.message.includes("\n"), false);
    equal(error.details.host, "192.0.2.10");
  }
});

Deno.test("an SSH connection that never came up sent nothing: the call is a plain failure naming the host", async () => {
  await using tmp = await tempDir("ployz-ssh-fake-");
  const dir = tmp.path;
  const ssh = `${dir}/ssh`;
  await Deno.writeTextFile(
    ssh,
    "#!/bin/sh\necho 'ssh: connect to host 192.0.2.10 port 2222: Connection refused' >&2\nexit 255\n",
    { mode: 0o755 },
  );
  const client = openConnection(choice, { sshProgram: ssh });
  const error = await client.describeContract().catch((e) => e) as RpcError;
  client.close();
  equal(error.code, "unavailable");
  equal(error.details.no_answer, false, "nothing was sent, so nothing may have happened");
  const cause = error.cause as OperatorError;
  equal(cause.code, "unavailable");
  match(
    cause.message,
    /^Cannot connect to context "prod" \(ops@192\.0\.2\.10:2222\): "192\.0\.2\.10" is unreachable/,
  );
});
