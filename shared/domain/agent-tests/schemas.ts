import * as z from 'zod/mini';
import { named } from '../common/named';
import { lazy } from '../common/lazy';
import { DynamicVariables, freeForm, freeFormObject, pageQueryShape, queryInt, uuid } from '../common/schemas';
import { AgentVersionPin } from '../agents/schemas';
import { withPatternEngine } from './patterns';

/**
 * Agent tests (docs/api.md, "Versions and tests"): a simulated user (scripted turns or a persona the
 * model plays), tool mocks and criteria; runs of them against a version or the draft.
 */

export const MAX_SCRIPTED_TURNS = 50;
export const MAX_PERSONA_TURNS = 30;
export const DEFAULT_PERSONA_TURNS = 10;
export const MAX_CRITERIA = 30;
export const MAX_TOOL_MOCKS = 50;
/** Tests one run may name (each × `repeat`, up to 5, is one queue job). */
export const MAX_RUN_TESTS = 100;
export const MAX_REPEAT = 5;
/** Tests one agent may have. */
export const MAX_TESTS_PER_AGENT = 200;

const text = (max: number) => z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(max));

export const ScriptedUser = /* @__PURE__ */ named('ScriptedTestUser', () => z.strictObject({
  turns: z.array(z.string().check(z.refine((s) => s.trim().length > 0, 'must not be empty'), z.maxLength(4000))).check(
    z.minLength(1, 'must have at least one turn'),
    z.maxLength(MAX_SCRIPTED_TURNS, `must have at most ${MAX_SCRIPTED_TURNS} turns`),
  ),
}), 'A scripted user: its messages, sent one per turn in order');

export const PersonaUser = /* @__PURE__ */ named('PersonaTestUser', () => z.strictObject({
  persona: text(4000),
  goal: text(2000),
  max_turns: z._default(z.int().check(z.minimum(1), z.maximum(MAX_PERSONA_TURNS)), DEFAULT_PERSONA_TURNS),
}), 'A simulated user played by the model: who it is, what it wants, and at most how many messages it sends (default 10)');

export const TestUser = /* @__PURE__ */ named('TestUser', () => z.union([ScriptedUser, PersonaUser]), 'Scripted (`turns`) or played by the model (`persona`, `goal`, `max_turns`)');

/** Which agent reply a reply criterion reads: the n-th (from 1), any, or the last. */
const ReplyTurn = () => z._default(z.union([z.int().check(z.minimum(1), z.maximum(200)), z.literal('any'), z.literal('last')]), 'any');

/** Why a user's pattern cannot be compiled by the linear-time engine, or undefined when it can (patterns.ts). */
const validPattern = (p: string) => withPatternEngine((engine) => engine.patternProblem(p) === undefined);

export const UNMOCKED_RULES = ['refuse', 'fail'] as const;

export const TEST_END_REASONS = ['agent_ended', 'transferred', 'user_ended', 'max_turns'] as const;

export const TestCriterion = /* @__PURE__ */ named('TestCriterion', () => z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('reply_contains'), text: text(1000), turn: ReplyTurn() }),
  z.strictObject({ type: z.literal('reply_not_contains'), text: text(1000), turn: ReplyTurn() }),
  z.strictObject({
    type: z.literal('reply_matches'),
    pattern: z.string().check(z.minLength(1), z.maxLength(1000), z.refine(validPattern, 'must be a regular expression in RE2 syntax (matched in linear time: no lookaround, no backreferences)')),
    turn: ReplyTurn(),
  }),
  z.strictObject({
    type: z.literal('tool_called'),
    tool: text(64),
    arguments: z.optional(freeFormObject()),
    times: z.optional(z.int().check(z.minimum(0), z.maximum(100))),
  }),
  z.strictObject({ type: z.literal('tool_not_called'), tool: text(64) }),
  z.strictObject({ type: z.literal('ended'), end_reason: z.optional(z.enum(TEST_END_REASONS)) }),
  /** The agent handed the conversation to this agent (`handoff_to_agent`, docs/api.md "Agent-to-agent hand-off"). */
  z.strictObject({ type: z.literal('handed_off_to'), agent_id: uuid() }),
  z.strictObject({
    type: z.literal('judge'),
    rubric: text(2000),
    /** The model that judges (default: the agent's model). */
    judge_model: z.optional(text(200)),
    /** Short examples of a reply that meets the rubric, and of one that does not, shown to the judge. */
    success_examples: z.optional(z.array(text(2000)).check(z.maxLength(5))),
    failure_examples: z.optional(z.array(text(2000)).check(z.maxLength(5))),
  }),
]), 'A criterion named by `type`; docs/api.md, "Versions and tests", describes each');
export type TestCriterion = z.output<typeof TestCriterion>;

export const ToolMock = /* @__PURE__ */ named('ToolMock', () => z.strictObject({
  tool: text(64),
  /** What the tool answers (any JSON, null included; required: checked below, so a missing one is a 400 naming it). */
  output: z.optional(freeForm(z.unknown())),
  /** When set, the mock answers only calls whose arguments contain these members (equal values). */
  arguments: z.optional(freeFormObject()),
}).check(z.refine((m) => m.output !== undefined, { message: 'is required (any JSON, null included): what the tool answers', path: ['output'] })), 'A tool\'s answer during a test: `output` for calls of `tool` (whose arguments contain `arguments`, when given)');

export const TestContact = /* @__PURE__ */ named('TestContact', () => z.strictObject({
  first_name: z.optional(z.string().check(z.maxLength(200))),
  last_name: z.optional(z.string().check(z.maxLength(200))),
  email: z.optional(z.string().check(z.maxLength(320))),
  phone: z.optional(z.string().check(z.maxLength(32))),
  company: z.optional(z.string().check(z.maxLength(200))),
  timezone: z.optional(z.string().check(z.maxLength(64))),
}), 'The contact the test\'s conversation is with (fills `{{contact.*}}`); no contact is read or written');

const testFields = /* @__PURE__ */ lazy(() => ({
  name: text(200),
  user: TestUser,
  dynamic_variables: DynamicVariables,
  contact: z.nullable(TestContact),
  tool_mocks: z.array(ToolMock).check(z.maxLength(MAX_TOOL_MOCKS)),
  criteria: z.array(TestCriterion).check(z.minLength(1, 'must have at least one criterion: a test passes only on evidence'), z.maxLength(MAX_CRITERIA)),
  /** A call of a tool with no mock: `refuse` (the model hears "not mocked in this test") or `fail` (the test fails too). */
  unmocked: z.enum(UNMOCKED_RULES),
}));

export const CreateAgentTestBody = /* @__PURE__ */ named('CreateAgentTestRequest', () => z.strictObject({
  name: testFields.name,
  user: testFields.user,
  dynamic_variables: z.optional(testFields.dynamic_variables),
  contact: z.optional(testFields.contact),
  tool_mocks: z.optional(testFields.tool_mocks),
  criteria: testFields.criteria,
  unmocked: z.optional(testFields.unmocked),
}), 'A test of an agent');
export type CreateAgentTestInput = z.output<typeof CreateAgentTestBody>;

export const UpdateAgentTestBody = /* @__PURE__ */ named('UpdateAgentTestRequest', () => z.strictObject({
  name: z.optional(testFields.name),
  user: z.optional(testFields.user),
  dynamic_variables: z.optional(testFields.dynamic_variables),
  contact: z.optional(testFields.contact),
  tool_mocks: z.optional(testFields.tool_mocks),
  criteria: z.optional(testFields.criteria),
  unmocked: z.optional(testFields.unmocked),
}), 'Fields of a test to change');
export type UpdateAgentTestInput = z.output<typeof UpdateAgentTestBody>;

export const AgentTest = /* @__PURE__ */ named('AgentTest', () => z.object({
  id: z.string(),
  agent_id: z.string(),
  ...testFields,
  created_at: z.string(),
  updated_at: z.string(),
}), 'A test of an agent: a simulated user, tool mocks and criteria');
export type AgentTest = z.output<typeof AgentTest>;

export const AgentTestParams = /* @__PURE__ */ lazy(() => z.strictObject({ id: uuid(), test_id: uuid() }));
export const AgentTestRunParams = /* @__PURE__ */ lazy(() => z.strictObject({ id: uuid(), run_id: uuid() }));
/** A run's results come a page at a time (default 20, at most 100). */
export const AgentTestRunQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  results_limit: z._default(queryInt(1, 100, 'results_limit'), 20),
  results_cursor: z.optional(z.string().check(z.minLength(1), z.maxLength(2048))),
}));
export const AgentTestListQuery = /* @__PURE__ */ lazy(() => z.strictObject(pageQueryShape));

export const StartTestRunBody = /* @__PURE__ */ named('StartTestRunRequest', () => z.strictObject({
  /** Default: every test of the agent. */
  test_ids: z.optional(z.array(uuid()).check(z.minLength(1), z.maxLength(MAX_RUN_TESTS))),
  agent_version: z._default(AgentVersionPin, 'draft'),
  repeat: z._default(z.int().check(z.minimum(1), z.maximum(MAX_REPEAT)), 1),
}), 'Which tests to run (default all), against which version (default "draft"), how many times each (1–5)');
export type StartTestRunInput = z.output<typeof StartTestRunBody>;

/** `error`: the criterion could not be judged (the judge failed or answered no verdict): the result is an error, never a pass. */
export const VERDICTS = ['passed', 'failed', 'not_evaluated', 'error'] as const;
/** Why a criterion was not evaluated. */
export const NOT_EVALUATED_REASONS = ['local_model', 'not_run'] as const;
export const RESULT_STATUSES = ['passed', 'failed', 'error'] as const;
export const RUN_STATUSES = ['queued', 'running', 'completed'] as const;

export const CriterionVerdict = /* @__PURE__ */ named('CriterionVerdict', () => z.looseObject({
  type: z.string(),
  verdict: z.enum(VERDICTS),
  detail: z.string(),
}), 'A criterion (as written in the test) with its verdict and why');

export const TestToolCall = /* @__PURE__ */ named('TestToolCall', () => z.object({
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  result: z.unknown(),
  /** `mock`: a mock answered; `not_mocked`: refused during a test; `platform`: run for real (check_availability, end_call). */
  /** `rejected`: the platform refused the call before any tool ran (no such tool, invalid arguments). */
  answered_by: z.enum(['mock', 'not_mocked', 'platform', 'rejected']),
}), 'A tool call the agent made during a test');

export const TestResult = /* @__PURE__ */ named('TestResult', () => z.object({
  test_id: z.string(),
  test_name: z.string(),
  attempt: z.int(),
  status: z.enum(RESULT_STATUSES),
  transcript: z.array(z.object({ role: z.enum(['agent', 'user']), content: z.string() })),
  tool_calls: z.array(TestToolCall),
  end_reason: z.nullable(z.enum(TEST_END_REASONS)),
  criteria: z.array(CriterionVerdict),
  usage: z.object({ llm_requests: z.int(), prompt_tokens: z.int(), completion_tokens: z.int() }),
  /** Why the test could not run or could not be judged (`status` error), else null. */
  error: z.nullable(z.string()),
  /** The criteria that were not evaluated (index in `criteria`, type) and why: never evidence for a pass. */
  not_evaluated: z.array(z.object({ criterion: z.int(), type: z.string(), reason: z.enum(NOT_EVALUATED_REASONS), detail: z.string() })),
  /** Mocks no call used, and why (`the agent has no tool …`, `never called`). */
  unused_mocks: z.array(z.object({ tool: z.string(), reason: z.string() })),
  /** True when the transcript or tool results were shortened so the result fits one stored item. */
  truncated: z.boolean(),
  duration_ms: z.int(),
  completed_at: z.string(),
}), 'One test × attempt of a run');
export type TestResult = z.output<typeof TestResult>;

export const TestRun = /* @__PURE__ */ named('TestRun', () => z.object({
  id: z.string(),
  agent_id: z.string(),
  /** The version run against, or null for the draft (frozen when the run started). */
  agent_version: z.nullable(z.int()),
  status: z.enum(RUN_STATUSES),
  test_ids: z.array(z.string()),
  repeat: z.int(),
  /** Results landed so far (the run completes when every test × attempt has one); absent in lists. */
  results: z.optional(z.array(TestResult)),
  /** `not_evaluated`: results with at least one criterion not evaluated (a gated publish refuses them unless allowed). */
  summary: z.object({ total: z.int(), passed: z.int(), failed: z.int(), errored: z.int(), not_evaluated: z.int() }),
  /** A page of results: the next page's cursor (`results_cursor`), null on the last. Absent in lists. */
  results_next_cursor: z.optional(z.nullable(z.string())),
  /** After this time the run completes whatever is missing: each missing result becomes an `error`. */
  expires_at: z.string(),
  /** What the run could not judge, said once (the local model and `judge` criteria, say). */
  notices: z.array(z.string()),
  created_at: z.string(),
  started_at: z.nullable(z.string()),
  completed_at: z.nullable(z.string()),
}), 'A run of an agent\'s tests; GET /test-runs lists runs without their results');
export type TestRun = z.output<typeof TestRun>;

export const PublishVersionBody = /* @__PURE__ */ named('PublishAgentVersionRequest', () => z.strictObject({
  description: z.optional(z.string().check(z.maxLength(1000))),
  /** Run every test against the draft first and publish only when all pass (422 otherwise). */
  require_passing_tests: z.optional(z.boolean()),
  /** Publish the frozen draft a completed run of every test passed (instead of the draft as it is now). */
  test_run_id: z.optional(uuid()),
  /** A gate passes a suite with `not_evaluated` criteria only when this is true. */
  allow_not_evaluated: z.optional(z.boolean()),
  /** A precondition: publish only while `published_version` is this (null: the draft); 409 otherwise. */
  expected_published_version: z.optional(z.nullable(z.int().check(z.minimum(1)))),
}), 'Publishes the draft (or a passed run\'s frozen draft) as the next version');

export const AgentVersion = /* @__PURE__ */ named('AgentVersion', () => z.object({
  agent_id: z.string(),
  version: z.int(),
  description: z.string(),
  created_at: z.string(),
  /** The frozen copy of every field that shapes a conversation (selected tools by reference: tool ids). */
  config: z.record(z.string(), z.unknown()),
  /** The passing run that gated this publish, when `require_passing_tests` was set. */
  test_run_id: z.optional(z.string()),
}), 'An immutable published version of an agent');

export const AgentVersionParams = /* @__PURE__ */ lazy(() => z.strictObject({
  id: uuid(),
  version: z.pipe(
    z.string().check(z.regex(/^[1-9]\d{0,9}$/, 'must be a version number (1, 2, …)')),
    z.transform((s: string) => Number(s)),
  ),
}));
