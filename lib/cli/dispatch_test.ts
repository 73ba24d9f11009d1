import { equal, match } from "node:assert/strict";
import { bufferIo, type Command, dispatch, notBuilt } from "./mod.ts";

const program: Command = {
  name: "p",
  summary: "Test program",
  subcommands: [
    {
      name: "group",
      summary: "A group",
      subcommands: [{
        name: "leaf",
        summary: "A leaf",
        usage: "NAME [--count N]",
        options: { count: { type: "string" }, json: { type: "boolean" } },
        positionals: [1, 1],
        run: ({ values, positionals, io }) => {
          io.out(`${positionals[0]} ${values.count ?? "-"}\n`);
          return Promise.resolve(0);
        },
      }],
    },
    notBuilt("later", "Something for later", "p"),
  ],
};

Deno.test("dispatch() runs a nested leaf with its options and positionals", async () => {
  const io = bufferIo();
  equal(await dispatch(program, ["group", "leaf", "x", "--count", "3"], io), 0);
  equal(io.stdout, "x 3\n");
});

Deno.test("dispatch() reports usage mistakes in one line and exits 2", async () => {
  for (
    const [argv, line] of [
      [["nope"], 'error[invalid_argument]: Unknown command "nope" for "p"'],
      [
        ["group", "leaf", "x", "--bogus"],
        'error[invalid_argument]: Unknown option "--bogus" for "p group leaf"',
      ],
      [
        ["group", "leaf"],
        'error[invalid_argument]: Missing argument for "p group leaf": expected NAME [--count N]',
      ],
      [["group", "leaf", "x", "y"], 'error[invalid_argument]: Unexpected argument "y" for "p group leaf"'],
      [["group", "leaf", "x", "--count"], 'error[invalid_argument]: Option "--count" needs a value'],
    ] as const
  ) {
    const io = bufferIo();
    equal(await dispatch(program, [...argv], io), 2, argv.join(" "));
    equal(io.stderr.split("\n")[0], line);
    match(io.stderr, /Usage: p/);
  }
});

Deno.test("dispatch() says an unbuilt command is not built and exits 1", async () => {
  const io = bufferIo();
  equal(await dispatch(program, ["later"], io), 1);
  equal(io.stderr, 'error[unsupported]: "p later" is not built yet in this release\n');
});

Deno.test("dispatch() prints errors as JSON under --json and help on --help", async () => {
  const io = bufferIo();
  equal(await dispatch(program, ["group", "leaf", "--json"], io), 2);
  equal(JSON.parse(io.stdout).error.code, "invalid_argument");
  const help = bufferIo();
  equal(await dispatch(program, ["group", "--help"], help), 0);
  match(help.stdout, /Commands:\n {2}leaf {2}A leaf/);
});
