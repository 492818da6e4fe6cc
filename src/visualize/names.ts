/**
 * Guard and action references as they sit in a resolved XState definition, reduced to names and
 * JSON params: diagrams label edges with the names, and the Stately export rebuilds the config
 * from them with stub implementations.
 */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export type GuardRef =
  | { kind: 'named'; type: string; params?: JsonValue }
  | { kind: 'and' | 'or'; guards: GuardRef[] }
  | { kind: 'not'; guard: GuardRef }
  | { kind: 'stateIn'; state: JsonValue };

export interface ActionRef {
  type: string;
  params?: JsonValue;
}

function field(value: object, key: string): unknown {
  return (value as Record<string, unknown>)[key];
}

/** Functions, `undefined` and symbols have no JSON form: dropped from objects, `null` in arrays. */
export function toJsonValue(value: unknown): JsonValue | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (Array.isArray(value)) return value.map((item) => toJsonValue(item) ?? null);
  if (typeof value === 'object') {
    const out: { [key: string]: JsonValue } = {};
    for (const [key, item] of Object.entries(value)) {
      const json = toJsonValue(item);
      if (json !== undefined) out[key] = json;
    }
    return out;
  }
  return undefined;
}

// An inline function has no name in the definition (toJSON gives null); it gets a visible
// placeholder instead, so diagrams and the Stately export still show that a guard is there.
function inlineName(fn: Function): string {
  return `inline:${fn.name || 'anonymous'}`;
}

function namedWithParams(type: string, params: unknown): { type: string; params?: JsonValue } {
  const json = params === undefined ? undefined : toJsonValue(params);
  return json === undefined ? { type } : { type, params: json };
}

export function guardRef(guard: unknown): GuardRef | null {
  if (guard === undefined || guard === null) return null;
  if (typeof guard === 'string') return { kind: 'named', type: guard };
  if (typeof guard === 'function') {
    // Higher-order guards (`and`, `or`, `not`, `stateIn`) are functions carrying their operands.
    const operands = field(guard, 'guards');
    const refs = Array.isArray(operands) ? operands.map(guardRef).filter((ref): ref is GuardRef => ref !== null) : [];
    switch (guard.name) {
      case 'and':
      case 'or':
        if (Array.isArray(operands)) return { kind: guard.name, guards: refs };
        break;
      case 'not':
        if (refs[0]) return { kind: 'not', guard: refs[0] };
        break;
      case 'stateIn':
        return { kind: 'stateIn', state: toJsonValue(field(guard, 'stateValue')) ?? null };
    }
    return { kind: 'named', type: inlineName(guard) };
  }
  if (typeof guard === 'object') {
    const type = field(guard, 'type');
    if (typeof type === 'string') return { kind: 'named', ...namedWithParams(type, field(guard, 'params')) };
  }
  throw new Error(`unrecognised guard ${JSON.stringify(guard)}`);
}

/** The label of a guard: its name; higher-order guards spell out their operands. */
export function guardName(ref: GuardRef): string {
  switch (ref.kind) {
    case 'named':
      return ref.type;
    case 'and':
    case 'or':
      return `${ref.kind}(${ref.guards.map(guardName).join(', ')})`;
    case 'not':
      return `not(${guardName(ref.guard)})`;
    case 'stateIn':
      return `stateIn(${JSON.stringify(ref.state)})`;
  }
}

/** The named guards a guard is built from (what needs an implementation). */
export function guardLeaves(ref: GuardRef): string[] {
  switch (ref.kind) {
    case 'named':
      return [ref.type];
    case 'and':
    case 'or':
      return ref.guards.flatMap(guardLeaves);
    case 'not':
      return guardLeaves(ref.guard);
    case 'stateIn':
      return [];
  }
}

export function actionRef(action: unknown): ActionRef {
  if (typeof action === 'string') return { type: action };
  if (typeof action === 'function') {
    // Built-in action creators (assign, raise, emit ...) tag their function with `type`.
    const type = field(action, 'type');
    return { type: typeof type === 'string' ? type : inlineName(action) };
  }
  if (typeof action === 'object' && action !== null) {
    const type = field(action, 'type');
    if (typeof type === 'string') return namedWithParams(type, field(action, 'params'));
  }
  throw new Error(`unrecognised action ${JSON.stringify(action)}`);
}

/** `name` or `name(key: value, ...)`: a compact, deterministic text for diagrams. */
export function actionLabel(ref: ActionRef): string {
  const params = ref.params;
  if (params === undefined) return ref.type;
  if (params !== null && typeof params === 'object' && !Array.isArray(params)) {
    const parts = Object.entries(params).map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
    return `${ref.type}(${parts.join(', ')})`;
  }
  return `${ref.type}(${JSON.stringify(params)})`;
}
