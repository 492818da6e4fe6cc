import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import { allEvents, eventsOfType, eventually, openRuntime, tempDataDir, untilAsleep, runtimeSession } from './helpers.js';

describe('scripted agent turns (issue 3 acceptance)', () => {
  const session = runtimeSession();
  let runtime: Runtime;

  it('runs echo, waits for the task result, and re-enters with class resume_expected_wait', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'echoer' });
    await runtime.prompt('echoer', { text: '/exec-wait echo hello-from-task' });
    const resolutions = await eventually(async () => {
      const events = await eventsOfType(runtime, 'echoer', 'continuation_resolved');
      return events.length >= 2 ? events : undefined;
    });
    const [first, second] = resolutions;
    expect(first?.payload).toMatchObject({ trigger_kind: 'operator_input', class: 'local_continuation', model_reentry: true });
    expect(second?.payload).toMatchObject({
      trigger_kind: 'task_result',
      class: 'resume_expected_wait',
      model_reentry: true,
      matched_waiting_reason: true,
      prior_waiting_reason: 'awaiting_task_result',
    });
    const [task] = (await runtime.getState('echoer')).tasks;
    expect(task).toBeUndefined(); // ListTasks-like view shows no terminal task
    const finished = (await eventsOfType(runtime, 'echoer', 'task_status_changed')).find((e) => e.payload['status'] === 'completed');
    const taskId = finished?.payload['task_id'] as string;
    const output = await runtime.taskOutput('echoer', taskId, { block: false, timeout_ms: 0, max_bytes: 8000 });
    expect(output.output_preview).toContain('hello-from-task');
    expect(output.status).toBe('completed');
    expect(output.exit_code).toBe(0);
    await untilAsleep(runtime, 'echoer');
    // The wait was consumed by the re-entry.
    expect((await runtime.getSummary('echoer')).active_wait_conditions).toEqual([]);
  });

  it('a failing command is a failed task with its exit code, and a follow-up enqueued by a turn runs as its own turn', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'failer' });
    await runtime.prompt('failer', { text: '/exec exit 7\n/enqueue second step' });
    const failed = await eventually(async () => (await eventsOfType(runtime, 'failer', 'task_status_changed')).find((e) => e.payload['status'] === 'failed'));
    expect(failed.payload['exit_code']).toBe(7);
    const followup = await eventually(async () =>
      (await eventsOfType(runtime, 'failer', 'continuation_resolved')).find((e) => e.payload['trigger_kind'] === 'internal_followup'),
    );
    expect(followup.payload['model_reentry']).toBe(true);
  });

  it('queue lanes: interject beats next beats normal beats background, FIFO within a lane', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'lanes' });
    await untilAsleep(runtime, 'lanes');
    await runtime.control('lanes', { action: 'stop' });
    await runtime.control('lanes', { action: 'start' });
    // Queue several messages in one go, before the scheduler's next look.
    const ids = await Promise.all([
      runtime.enqueue('lanes', { kind: 'webhook_event', priority: 'background', text: 'bg-1' }),
      runtime.enqueue('lanes', { kind: 'webhook_event', priority: 'normal', text: 'normal-1' }),
      runtime.enqueue('lanes', { kind: 'webhook_event', priority: 'next', text: 'next-1' }),
      runtime.enqueue('lanes', { kind: 'webhook_event', priority: 'normal', text: 'normal-2' }),
      runtime.prompt('lanes', { text: 'interject-1' }),
    ]);
    const byText = new Map(ids.map((a, i) => [a.message_id, ['bg-1', 'normal-1', 'next-1', 'normal-2', 'interject-1'][i]]));
    // The order turns took them in: each turn's messages at its start, then those that joined it.
    const takenOrder = async () =>
      (await allEvents(runtime, 'lanes'))
        .filter((e) => e.type === 'turn_started' || e.type === 'turn_interjected')
        .flatMap((e) => (e.payload['message_ids'] ?? [e.payload['message_id']]) as string[]);
    const order = await eventually(async () => {
      const taken = await takenOrder();
      return ids.every((a) => taken.includes(a.message_id)) ? taken : undefined;
    });
    const texts = order.map((id) => byText.get(id)).filter(Boolean);
    // The first admitted message may start before the rest arrive; the remaining order is by lane.
    const rest = texts.slice(texts.length - 4);
    expect(texts).toHaveLength(5);
    const expected = ['interject-1', 'next-1', 'normal-1', 'normal-2', 'bg-1'].filter((t) => rest.includes(t));
    expect(rest).toEqual(expected);
  });
});

describe('InvokeAgent (seed 004 ActorInvocation)', () => {
  it("a child agent's turn result re-enters the parent as a task_result", async () => {
    const dir = tempDataDir();
    const runtime = await openRuntime(dir.dir);
    try {
      await runtime.createAgent({ agent_id: 'parent' });
      const task = await runtime.invokeAgent('parent', { prompt: 'child says hi', summary: 'delegate' });
      expect(task.kind).toBe('actor_invocation');
      expect(task.child_agent_id).toBeTruthy();
      const done = await eventually(async () => {
        const t = await runtime.getTask('parent', task.id);
        return t.status === 'completed' ? t : undefined;
      });
      expect(done.result_text).toContain('child says hi');
      const reentry = await eventually(async () =>
        (await eventsOfType(runtime, 'parent', 'continuation_resolved')).find((e) => e.payload['trigger_kind'] === 'task_result'),
      );
      expect(reentry.payload['model_reentry']).toBe(true);
      expect((await runtime.getSummary(task.child_agent_id as string)).identity.owner).toBe('parent');
    } finally {
      await runtime.close();
      dir.cleanup();
    }
  });
});
