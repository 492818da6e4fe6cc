import { textOf, TurnResult, type MessageEnvelope, type TurnAction } from '../../domain/index.js';
import type { SafePoint, TurnRunner } from './turn-runner.js';

/**
 * A deterministic runner for tests and demos: messages carry directives instead of prose.
 *
 * - A JSON body (or text that parses as JSON) of the shape `{ "actions": [...], "text"?: "..." }`
 *   is taken as the turn result itself (see `TurnAction` for the actions).
 * - Otherwise each line starting with `/` is one directive:
 *   `/exec <cmd>` runs a command task, `/exec-wait <cmd>` also waits for its result,
 *   `/enqueue <text>` queues a follow-up to the agent itself, `/work <objective>` creates a work
 *   item, `/complete <work_item_id>` completes one, `/timer <ms>` sets a timer and waits for it,
 *   `/wait <operator_input|external|system> [resource]` waits, `/sleep` ends the turn,
 *   `/fail <reason>` fails the turn, `/hold` holds the turn at its next safe point until a message
 *   joins it (an operator prompt: see `SafePoint`). Other lines are echoed back as the turn's text.
 * Runtime-generated messages (task results, ticks, timer fires) carry no directives.
 *
 * The messages run in the order the turn took them, and after each one's directives the runner is
 * at a safe point: the messages that joined there run next, in the same turn.
 */
export class ScriptedRunner implements TurnRunner {
  async run(offer: { messages: MessageEnvelope[] }, signal?: AbortSignal, safePoint?: SafePoint): Promise<TurnResult> {
    const actions: TurnAction[] = [];
    const echoes: string[] = [];
    const messages = [...offer.messages];
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i] as MessageEnvelope;
      if (!carriesDirectives(message)) {
        echoes.push(`${message.kind}: ${textOf(message.body).slice(0, 200)}`);
      } else {
        const parsed = parseScript(message);
        actions.push(...parsed.actions);
        if (parsed.text) echoes.push(parsed.text);
      }
      if (!safePoint || signal?.aborted) continue;
      const joined = holds(message) && signal ? await safePoint.next(signal) : await safePoint.take();
      messages.push(...joined);
    }
    return { actions, text: echoes.join('\n') };
  }
}

/** Whether the message asks to hold the turn at its safe point (`/hold`). */
function holds(message: MessageEnvelope): boolean {
  return carriesDirectives(message) && message.body?.type === 'text' && message.body.text.split('\n').some((line) => line.trim() === '/hold');
}

function carriesDirectives(message: MessageEnvelope): boolean {
  return ['operator_prompt', 'internal_followup', 'webhook_event', 'channel_event'].includes(message.kind);
}

export function parseScript(message: MessageEnvelope): TurnResult {
  const body = message.body;
  if (!body) return { actions: [] };
  const json = body.type === 'json' ? body.value : tryJson(body.text);
  if (json !== undefined) {
    const result = TurnResult.safeParse(json);
    return result.success ? result.data : { actions: [], text: 'unrecognised JSON script' };
  }
  const actions: TurnAction[] = [];
  const text: string[] = [];
  for (const raw of textOf(body).split('\n')) {
    const line = raw.trim();
    if (line === '/hold') continue;
    const directive = line.startsWith('/') ? parseDirective(line) : null;
    if (directive) actions.push(directive);
    else if (line) text.push(line);
  }
  return { actions, text: text.join('\n') };
}

function tryJson(text: string): unknown {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return undefined;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return undefined;
  }
}

function parseDirective(line: string): TurnAction | null {
  const space = line.indexOf(' ');
  const name = space < 0 ? line.slice(1) : line.slice(1, space);
  const arg = space < 0 ? '' : line.slice(space + 1).trim();
  switch (name) {
    case 'exec':
      return arg ? { type: 'exec_command', cmd: arg } : null;
    case 'exec-wait':
      return arg ? { type: 'exec_command', cmd: arg, wait: true } : null;
    case 'enqueue':
      return arg ? { type: 'enqueue', text: arg } : null;
    case 'work':
      return arg ? { type: 'create_work_item', objective: arg } : null;
    case 'complete':
      return arg ? { type: 'complete_work_item', work_item_id: arg } : null;
    case 'timer': {
      const ms = Number(arg);
      return Number.isInteger(ms) && ms >= 0 ? { type: 'set_timer', duration_ms: ms, wait: true } : null;
    }
    case 'wait': {
      const [wake, resource] = arg.split(/\s+/);
      if (wake !== 'operator_input' && wake !== 'external' && wake !== 'system') return null;
      return resource ? { type: 'wait_for', wake, resource } : { type: 'wait_for', wake };
    }
    case 'sleep':
      return { type: 'sleep' };
    case 'fail':
      return { type: 'fail', reason: arg || 'scripted failure' };
    default:
      return null;
  }
}

