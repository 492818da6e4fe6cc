/**
 * Prints a config object as TypeScript source: unquoted keys where they are identifiers, single
 * quotes, objects and arrays on one line when they fit, so the Stately export reads like hand-written code.
 */
export class Code {
  constructor(readonly text: string) {}
}

export type SourceValue = string | number | boolean | null | Code | SourceValue[] | { [key: string]: SourceValue };

const LINE_WIDTH = 100;
const INDENT = '  ';

export function quote(text: string): string {
  const json = JSON.stringify(text);
  return `'${json.slice(1, -1).replace(/\\"/g, '"').replace(/'/g, "\\'")}'`;
}

function printKey(key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? key : quote(key);
}

function entriesOf(value: SourceValue): Array<[string | null, SourceValue]> | null {
  if (Array.isArray(value)) return value.map((item): [null, SourceValue] => [null, item]);
  if (value !== null && typeof value === 'object' && !(value instanceof Code)) return Object.entries(value);
  return null;
}

function printScalar(value: string | number | boolean | null | Code): string {
  if (value instanceof Code) return value.text;
  return typeof value === 'string' ? quote(value) : String(value);
}

export function printInline(value: SourceValue): string {
  const entries = entriesOf(value);
  if (entries === null) return printScalar(value as string | number | boolean | null | Code);
  const parts = entries.map(([key, item]) => (key === null ? printInline(item) : `${printKey(key)}: ${printInline(item)}`));
  if (Array.isArray(value)) return `[${parts.join(', ')}]`;
  return parts.length === 0 ? '{}' : `{ ${parts.join(', ')} }`;
}

/** `prefix` is how many characters stand before the value on its first line (indent, key). */
export function printSource(value: SourceValue, depth = 0, prefix = INDENT.length * depth): string {
  const inline = printInline(value);
  const entries = entriesOf(value);
  // The trailing comma after the value counts towards the line too.
  if (entries === null || entries.length === 0 || prefix + inline.length + 1 <= LINE_WIDTH) return inline;
  const pad = INDENT.repeat(depth + 1);
  const lines = entries.map(([key, item]) => {
    const head = `${pad}${key === null ? '' : `${printKey(key)}: `}`;
    return `${head}${printSource(item, depth + 1, head.length)},`;
  });
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  return `${open}\n${lines.join('\n')}\n${INDENT.repeat(depth)}${close}`;
}
