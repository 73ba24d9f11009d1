import { equal, match } from "node:assert/strict";
import type { Command } from "./command.ts";
import { dispatch } from "./dispatch.ts";
import { bufferIo } from "./io.ts";
import { lazyCommand } from "./lazy.ts";
import { notBuilt } from "./not_built.ts";

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
        description: ["First line.", "Second line."],
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
  const leafHelp = bufferIo();
  equal(await dispatch(program, ["group", "leaf", "--help"], leafHelp), 0);
  match(leafHelp.stdout, /\n\nA leaf\n\nFirst line\.\nSecond line\.\n\nOptions:\n/);
});

// A module exporting a command named `name` that exits with `exitCode`.
function commandModule(name: string, exitCode: number): string {
  const source = `export const ${name} = { name: "${name}", summary: "${name.toUpperCase()}", ` +
    `run: () => Promise.resolve(${exitCode}) };`;
  return `data:application/javascript,${encodeURIComponent(source)}`;
}

Deno.test("dispatch() loads a lazy command only when the command line selects it", async () => {
  const loads: string[] = [];
  const lazyProgram: Command = {
    name: "p",
    summary: "Test program",
    subcommands: [
      lazyCommand("a", "A", () => {
        loads.push("a");
        return import(commandModule("a", 7)).then((m) => m.a);
      }),
      lazyCommand("b", "B", () => {
        loads.push("b");
        return import(commandModule("b", 0)).then((m) => m.b);
      }),
    ],
  };
  const help = bufferIo();
  equal(await dispatch(lazyProgram, ["--help"], help), 0);
  match(help.stdout, /a {2}A\n {2}b {2}B/);
  equal(loads.length, 0);
  equal(await dispatch(lazyProgram, ["a"], bufferIo()), 7);
  equal(loads.join(","), "a");
  const wrong: Command = {
    name: "p",
    summary: "Test program",
    subcommands: [lazyCommand("c", "C", () => import(commandModule("a", 0)).then((m) => m.c))],
  };
  const io = bufferIo();
  equal(await dispatch(wrong, ["c"], io), 1);
  match(io.stderr, /^error\[internal\]: "p c" loaded no command named "c"\n/);
});

Deno.test("dispatch() reports a command module that cannot load in one line naming it, exit 1", async () => {
  const broken: Command = {
    name: "p",
    summary: "Test program",
    subcommands: [
      lazyCommand("gone", "Gone", () => import("./no_such_command.ts").then((m) => m.gone)),
    ],
  };
  for (const argv of [["gone"], ["gone", "--help"]]) {
    const io = bufferIo();
    equal(await dispatch(broken, argv, io), 1);
    equal(io.stderr.split("\n").length, 2, io.stderr);
    match(
      io.stderr,
      /^error\[internal\]: Cannot load "p gone": .*no_such_command\.ts.*reinstall the release\n$/,
    );
    equal(io.stdout, "");
  }
  const json = bufferIo();
  equal(await dispatch(broken, ["gone", "--json"], json), 1);
  match(JSON.parse(json.stdout).error.details.module, /^file:\/\/.*\/no_such_command\.ts$/);
});

Deno.test("dispatch() runs the program's version command for --version alone at the top", async () => {
  const versioned: Command = {
    ...program,
    subcommands: [...program.subcommands!, {
      name: "version",
      summary: "Print the version",
      run: ({ io }) => {
        io.out("p 1.2.3\n");
        return Promise.resolve(0);
      },
    }],
  };
  const io = bufferIo();
  equal(await dispatch(versioned, ["--version"], io), 0);
  equal(io.stdout, "p 1.2.3\n");
  // Only alone, only at the top, and only where the program has a version command.
  for (
    const [p, argv, line] of [
      [versioned, ["--version", "x"], 'error[invalid_argument]: Unknown option "--version" for "p"'],
      [
        versioned,
        ["group", "--version"],
        'error[invalid_argument]: Unknown option "--version" for "p group"',
      ],
      [program, ["--version"], 'error[invalid_argument]: Unknown option "--version" for "p"'],
    ] as const
  ) {
    const out = bufferIo();
    equal(await dispatch(p, [...argv], out), 2, argv.join(" "));
    equal(out.stderr.split("\n")[0], line);
  }
});
