import type { Command } from "./command.ts";

/** The `--help` text of `command`, reached by `path` (e.g. `ployz machine`). */
export function usageText(path: string, command: Command): string {
  const lines: string[] = [];
  const description = descriptionText(command);
  if (command.subcommands) {
    lines.push(`Usage: ${path} <command> [options]`, "", command.summary, "", "Commands:");
    const width = Math.max(...command.subcommands.map((c) => c.name.length));
    for (const sub of command.subcommands) lines.push(`  ${sub.name.padEnd(width)}  ${sub.summary}`);
    if (description) lines.push("", description);
    lines.push("", `Run "${path} <command> --help" for a command's options.`);
    return lines.join("\n") + "\n";
  }
  lines.push(`Usage: ${path}${command.usage ? ` ${command.usage}` : ""}`, "", command.summary);
  if (description) lines.push("", description);
  const options = Object.entries(command.options ?? {});
  lines.push("", "Options:");
  for (const [name, opt] of options) {
    const short = opt.short ? `-${opt.short}, ` : "    ";
    const arg = opt.type === "string" ? ` <${name}>` : "";
    lines.push(`  ${short}--${name}${arg}`);
  }
  lines.push("      --help  Show this help");
  return lines.join("\n") + "\n";
}

function descriptionText(command: Command): string | undefined {
  const { description } = command;
  return Array.isArray(description) ? description.join("\n") : description;
}
