import { parseArgs } from 'node:util';

/** One option of a command: `--name <value>` (string) or `--name` (flag). */
export interface OptionSpec {
  type: 'string' | 'boolean';
  /** What the value is, shown in the usage: `<dir>`, `<n>`. */
  value?: string;
  /** Applied when the option is absent. */
  default?: string;
  /** How the usage shows the default when it is not a plain value ("V8's own", "./data"). */
  defaultText?: string;
  description: string;
}

/** A command of the `holon-xstate` program: its name, what it does, its options. */
export interface CommandSpec {
  name: string;
  summary: string;
  /** Longer text shown under the usage line. */
  description?: string;
  options: Readonly<Record<string, OptionSpec>>;
  /** The one positional argument the command takes, if any (`replay <agent-id>`). */
  argument?: { name: string; description: string };
}

function synopsis(command: CommandSpec): string {
  return `${PROGRAM} ${command.name}${command.argument ? ` ${command.argument.name}` : ''} [options]`;
}

/** A bad command line: the message names what is wrong; the caller shows the usage and exits 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export const PROGRAM = 'holon-xstate';

const HELP: OptionSpec = { type: 'boolean', description: 'print this help and exit' };

function optionLabel(name: string, spec: OptionSpec): string {
  return spec.type === 'string' ? `--${name} ${spec.value ?? '<value>'}` : `--${name}`;
}

function wrap(text: string, width: number, indent: string): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter((w) => w.length > 0)) {
    if (line.length > 0 && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line.length > 0 ? `${line} ${word}` : word;
    }
  }
  if (line.length > 0) lines.push(line);
  return lines.join(`\n${indent}`);
}

/** The usage of one command: synopsis, description, every option with its default. */
export function commandUsage(command: CommandSpec): string {
  const options = { ...command.options, help: HELP };
  const labels = Object.entries(options).map(([name, spec]) => [optionLabel(name, spec), spec] as const);
  const column = Math.max(...labels.map(([label]) => label.length)) + 3;
  const indent = ' '.repeat(column + 2);
  const rows = labels.map(([label, spec]) => {
    const shown = spec.defaultText ?? spec.default;
    const text = shown === undefined ? spec.description : `${spec.description} (default: ${shown})`;
    return `  ${label.padEnd(column)}${wrap(text, 100 - column, indent)}`;
  });
  return [
    `usage: ${synopsis(command)}`,
    '',
    wrap(command.description ?? command.summary, 98, ''),
    '',
    ...(command.argument ? ['arguments:', `  ${command.argument.name.padEnd(column)}${wrap(command.argument.description, 100 - column, indent)}`, ''] : []),
    'options:',
    ...rows,
  ].join('\n');
}

/** The program's usage: one synopsis line per command, and how to get a command's options. */
export function programUsage(commands: readonly CommandSpec[]): string {
  const synopses = commands.map(synopsis);
  const column = Math.max(...synopses.map((s) => s.length)) + 3;
  return [
    ...commands.map((c, i) => `${i === 0 ? 'usage: ' : '       '}${(synopses[i] ?? '').padEnd(column)}${c.summary}`),
    '',
    `Run '${PROGRAM} <command> --help' for a command's options and their defaults.`,
  ].join('\n');
}

/** Parsed option values: strings (with their defaults applied) and flags. */
export class ParsedOptions {
  constructor(
    private readonly values: Readonly<Record<string, string | boolean | undefined>>,
    /** The command's positional argument (`CommandSpec.argument`), when it takes one. */
    readonly argument?: string,
  ) {}

  string(name: string): string | undefined {
    const value = this.values[name];
    return typeof value === 'string' ? value : undefined;
  }

  flag(name: string): boolean {
    return this.values[name] === true;
  }
}

export type ParsedCommandLine = { help: true } | { help: false; options: ParsedOptions };

const PARSE_ERROR_OPTION = /'(-{1,2}[^' ]+)/;

/**
 * Parses `args` against the command's options. `--help` / `-h` anywhere before `--` wins; an
 * unknown option, a missing value or a stray positional is a UsageError that names it.
 */
export function parseCommandLine(command: CommandSpec, args: readonly string[]): ParsedCommandLine {
  const end = args.indexOf('--');
  const head = end < 0 ? args : args.slice(0, end);
  if (head.includes('--help') || head.includes('-h')) return { help: true };
  const options: Record<string, { type: 'string' | 'boolean'; default?: string }> = {};
  for (const [name, spec] of Object.entries(command.options)) {
    options[name] = spec.default === undefined ? { type: spec.type } : { type: spec.type, default: spec.default };
  }
  try {
    const { values, positionals } = parseArgs({ args: [...args], options, strict: true, allowPositionals: command.argument !== undefined });
    if (command.argument && positionals.length !== 1) {
      throw new UsageError(positionals.length === 0 ? `'${command.name}' needs ${command.argument.name}` : `unexpected argument '${positionals[1]}': '${command.name}' takes one ${command.argument.name}`);
    }
    return { help: false, options: new ParsedOptions(values, positionals[0]) };
  } catch (error) {
    const code = (error as { code?: string }).code;
    const named = error instanceof Error ? PARSE_ERROR_OPTION.exec(error.message)?.[1] : undefined;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw new UsageError(`unknown option '${named ?? '?'}' for '${command.name}'`);
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      throw new UsageError(error instanceof Error ? error.message.replace(/^Option/, 'option') : 'invalid option value');
    }
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
      const value = error instanceof Error ? /'([^']*)'/.exec(error.message)?.[1] : undefined;
      throw new UsageError(`unexpected argument '${value ?? '?'}': '${command.name}' takes options only`);
    }
    throw error;
  }
}
