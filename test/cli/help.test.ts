import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commandUsage, parseCommandLine, programUsage, UsageError, type CommandSpec } from '../../src/cli/options.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Runs the installed command (package.json "bin") as a user would. */
function holon(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['bin/holon-xstate.js', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The option lines of a usage text: `--name <value>   description (default: x)`, wrapped lines joined. */
function optionLines(usage: string): string[] {
  const section = usage.slice(usage.indexOf('options:\n') + 'options:\n'.length);
  return section
    .split(/\n(?= {2}--)/)
    .map((entry) => entry.replace(/\s+/g, ' ').trim())
    .filter((entry) => entry.startsWith('--'));
}

const SPEC: CommandSpec = {
  name: 'demo',
  summary: 'a demo command',
  options: {
    'data-dir': { type: 'string', value: '<dir>', default: './data', description: 'data directory' },
    agent: { type: 'string', value: '<id>', defaultText: 'every agent', description: 'only this agent' },
    'dry-run': { type: 'boolean', description: 'change nothing' },
  },
};

describe('option parsing (src/cli/options.ts)', () => {
  it('applies defaults, reads strings and flags', () => {
    const parsed = parseCommandLine(SPEC, ['--agent', 'a1', '--dry-run']);
    expect(parsed.help).toBe(false);
    if (parsed.help) return;
    expect(parsed.options.string('data-dir')).toBe('./data');
    expect(parsed.options.string('agent')).toBe('a1');
    expect(parsed.options.flag('dry-run')).toBe(true);
    const plain = parseCommandLine(SPEC, []);
    if (!plain.help) expect(plain.options.flag('dry-run')).toBe(false);
  });

  it('answers --help and -h anywhere before --, even next to a bad option', () => {
    expect(parseCommandLine(SPEC, ['--help'])).toEqual({ help: true });
    expect(parseCommandLine(SPEC, ['--agent', 'x', '-h'])).toEqual({ help: true });
    expect(parseCommandLine(SPEC, ['--colour', '--help'])).toEqual({ help: true });
  });

  it('names an unknown option, a missing value and a stray argument', () => {
    expect(() => parseCommandLine(SPEC, ['--colour', 'red'])).toThrow(new UsageError("unknown option '--colour' for 'demo'"));
    expect(() => parseCommandLine(SPEC, ['-x'])).toThrow(new UsageError("unknown option '-x' for 'demo'"));
    expect(() => parseCommandLine(SPEC, ['--agent'])).toThrow(/--agent/);
    expect(() => parseCommandLine(SPEC, ['extra'])).toThrow(new UsageError("unexpected argument 'extra': 'demo' takes options only"));
  });

  it('shows every option with its default, and the help option', () => {
    const usage = commandUsage(SPEC);
    expect(usage.split('\n')[0]).toBe('usage: holon-xstate demo [options]');
    expect(optionLines(usage)).toEqual([
      '--data-dir <dir> data directory (default: ./data)',
      '--agent <id> only this agent (default: every agent)',
      '--dry-run change nothing',
      '--help print this help and exit',
    ]);
    expect(programUsage([SPEC, { ...SPEC, name: 'other', summary: 'another' }])).toMatch(
      /^usage: holon-xstate demo \[options\] +a demo command\n {7}holon-xstate other \[options\] +another\n/,
    );
  });
});

describe('holon-xstate --help (the installed bin)', () => {
  it('lists every command with exit 0', async () => {
    const { code, stdout } = await holon(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^usage: holon-xstate serve \[options\]/);
    expect(stdout).toMatch(/^ +holon-xstate migrate \[options\]/m);
    expect(stdout).toContain("Run 'holon-xstate <command> --help'");
  });

  it('serve --help and migrate --help print the usage with every option and its default, exit 0', async () => {
    const serve = await holon(['serve', '--help']);
    expect(serve.code).toBe(0);
    expect(serve.stdout.split('\n')[0]).toBe('usage: holon-xstate serve [options]');
    const serveOptions = optionLines(serve.stdout);
    for (const expected of [
      '--data-dir <dir> data directory (default: ./data)',
      '--port <n> TCP port; 0 = any free port (default: 8080)',
    ]) {
      expect(serveOptions).toContain(expected);
    }
    for (const name of ['--host', '--token', '--node-id', '--advertise-url', '--log-level', '--log-format', '--inspect-log', '--heap-growth', '--exit-with-parent']) {
      const line = serveOptions.find((entry) => entry.startsWith(`${name} `));
      expect(line, name).toMatch(/\(default: [^)]+\)$/);
    }
    const migrate = await holon(['migrate', '--help']);
    expect(migrate.code).toBe(0);
    expect(optionLines(migrate.stdout)).toEqual([
      '--data-dir <dir> data directory (default: ./data)',
      '--agent <id> only this agent (default: every agent)',
      '--dry-run write nothing: list the agents whose persisted state the machines do not have, or whose recovery point would be refused, with what migrate would do for each (exit 1 when any)',
      "--machines <module> with --dry-run: check against another version of the machines (default: this build's)",
      '--json with --dry-run: print the plan as one JSON object',
      '--help print this help and exit',
    ]);
  }, 60_000);

  it('an unknown option names it and shows the usage, exit 2', async () => {
    for (const [args, named] of [
      [['serve', '--colour', 'red'], "unknown option '--colour' for 'serve'"],
      [['migrate', '--dry'], "unknown option '--dry' for 'migrate'"],
      [['serve', '--log-format', 'xml'], "invalid --log-format 'xml': one of json, pretty"],
    ] as const) {
      const { code, stderr, stdout } = await holon([...args]);
      expect(code, args.join(' ')).toBe(2);
      expect(stderr).toContain(`holon-xstate: ${named}`);
      expect(stderr).toContain(`usage: holon-xstate ${args[0]} [options]`);
      expect(stdout).toBe('');
    }
    const unknown = await holon(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("holon-xstate: unknown command 'frobnicate'");
    expect(unknown.stderr).toContain('usage: holon-xstate serve [options]');
  }, 60_000);
});
