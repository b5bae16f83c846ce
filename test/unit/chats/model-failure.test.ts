/**
 * What a chat turn answers when its model fails (issue 42, section 7): under LOCAL_FAULTS an
 * injected fault reads by its kind — a transient one (429, 5xx, a timeout, a lost connection) says
 * when to retry; a malformed answer (a model's next answer can be good) says retry too; only a
 * refusal retrying cannot cure (a key, a model, a request the provider rejects) says it will not help.
 */
import { LlmError } from '../../../shared/adapters/llm/port';
import { AppError } from '../../../shared/errors';
import { modelFault } from '../../../shared/fault-point';
import { installLocalFaults, type FaultKind } from '../../../shared/local/faults';
import { modelFailure } from '../../../shared/domain/chats/turns';

afterEach(() => installLocalFaults(undefined));

/** The error the local runtime injects for one model request with only `kind` on. */
function injected(kind: FaultKind): LlmError {
  installLocalFaults({ seed: 'model-failure', rates: { [kind]: 1 } });
  const err = modelFault('local');
  expect(err).toBeInstanceOf(LlmError);
  return err as LlmError;
}

describe('a chat turn whose model failed', () => {
  it.each([
    ['model.429', 'rate_limited', 1],
    ['model.5xx', 'provider_error', 5],
    ['model.timeout', 'timeout', 5],
  ] as const)('an injected %s is a 503 that says to retry (%s, in %i s)', (kind, reason, seconds) => {
    const answer = modelFailure(injected(kind), false) as AppError;
    expect(answer.statusCode).toBe(503);
    expect(answer.message).toBe(`The agent's model did not answer (${reason}); retry in ${seconds} s; nothing was kept`);
    expect(answer.message).not.toMatch(/will not help/);
    expect(answer.details).toMatchObject({ reason, retry_after_seconds: seconds, kept: false });
  });

  it('a lost connection (unreachable) says to retry too, and a kept turn how to continue', () => {
    const answer = modelFailure(new LlmError('unreachable', 'The model provider could not be reached', { provider: 'openai' }), true) as AppError;
    expect(answer.statusCode).toBe(503);
    expect(answer.message).toMatch(/^The agent's model did not answer \(unreachable\); retry in 5 s; what the turn's tools did is kept: send the same message again/);
  });

  it('an injected malformed answer is a 502 that says retry, never that retrying will not help', () => {
    const answer = modelFailure(injected('model.malformed'), false) as AppError;
    expect(answer.statusCode).toBe(502);
    expect(answer.message).toBe("The agent's model answered something that is not a usable reply (malformed_answer); a model's next answer can be usable: retry, and check the model if it keeps happening; nothing was kept");
    expect(answer.details).toMatchObject({ reason: 'malformed_answer', provider_message: 'The model answered a tool call whose arguments are not JSON (injected)' });
  });

  it('a refusal retrying cannot cure still says so', () => {
    const answer = modelFailure(new LlmError('unauthorized', 'bad key', { provider: 'openai', status: 401 }), false) as AppError;
    expect(answer.statusCode).toBe(502);
    expect(answer.message).toBe("The agent's model refused the request (unauthorized); retrying will not help until it is fixed; nothing was kept");
  });
});
