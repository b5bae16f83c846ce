import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import { Agent, AgentListQuery, AgentStatusBody, CreateAgentBody, UpdateAgentBody } from './schemas';
import {
  AgentTest,
  AgentTestListQuery,
  AgentTestParams,
  AgentTestRunParams,
  AgentTestRunQuery,
  AgentVersion,
  AgentVersionParams,
  CreateAgentTestBody,
  PublishVersionBody,
  StartTestRunBody,
  TestRun,
  UpdateAgentTestBody,
} from '../agent-tests/schemas';
import { TrafficSplitResults, TrafficSplitResultsQuery } from '../analytics/split-schemas';

const tag = 'Agents';

export const createAgent = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/agents', operationId: 'createAgent', tag, auth: true,
  summary: 'Create an agent (`name` required; see docs/api.md for defaults)',
  entry: 'functions/agents/create.ts', body: CreateAgentBody,
  successMessage: 'Agent created successfully', access: { table: 'RW' },
});

export const listAgents = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/agents', operationId: 'listAgents', tag, auth: true,
  summary: 'List the organization\'s agents, optionally by status',
  entry: 'functions/agents/list.ts', query: AgentListQuery, list: true, access: { table: 'R' },
});

export const getAgent = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/agents/{id}', operationId: 'getAgent', tag, auth: true,
  summary: 'Get one agent', entry: 'functions/agents/get.ts', params: IdParams, access: { table: 'R' },
});

export const updateAgent = /* @__PURE__ */ defineOperation({
  method: 'PATCH', path: '/api/v1/agents/{id}', operationId: 'updateAgent', tag, auth: true,
  summary: 'Update an agent; only supplied fields change',
  entry: 'functions/agents/update.ts', params: IdParams, body: UpdateAgentBody,
  successMessage: 'Agent updated successfully', access: { table: 'RW' },
  errors: {
    422: 'The agent requires passing tests (`require_passing_tests`): a rollback, `published_version: null` or a `traffic_split` names a version no passed run stands behind (`details.reason` `tests_required`). Nothing is written.',
  },
});

export const updateAgentStatus = /* @__PURE__ */ defineOperation({
  method: 'PATCH', path: '/api/v1/agents/{id}/status', operationId: 'updateAgentStatus', tag, auth: true,
  summary: 'Change an agent\'s status', entry: 'functions/agents/update-status.ts',
  params: IdParams, body: AgentStatusBody,
  successMessage: 'Agent status updated successfully', access: { table: 'RW' },
});

export const deleteAgent = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/agents/{id}', operationId: 'deleteAgent', tag, auth: true,
  summary: 'Delete an agent permanently', entry: 'functions/agents/delete.ts', params: IdParams,
  successMessage: 'Agent deleted successfully', access: { table: 'RW', queues: ['agent-cleanup'] },
});

// ---- Versions (docs/api.md, "Versions and tests") ----

const versionsTag = 'Agent versions and tests';

export const publishAgentVersion = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/agents/{id}/versions', operationId: 'publishAgentVersion', tag: versionsTag, auth: true,
  summary: 'Publish the draft as the next version (optionally only when every test passes)',
  entry: 'functions/agents/versions-create.ts', params: IdParams, body: PublishVersionBody, bodyOptional: true,
  successMessage: 'Agent version published',
  errors: {
    409: '`expected_published_version` is not the agent\'s `published_version` (`details.reason` `published_version_changed`).',
    422: 'Gated (`require_passing_tests`, `test_run_id`, or the agent\'s `require_passing_tests`): a test did not pass (`details.reason` `tests_failed`, with `test_run_id` and `failed_tests`), criteria were not evaluated (`tests_not_evaluated`; allow them with `allow_not_evaluated`), the tests did not complete within 22 s (`tests_still_running`), the agent has no tests (`no_tests`), the named run cannot gate a publish (`run_not_usable`), or the agent requires passing tests (`tests_required`). Nothing is published.',
  },
  // A gated publish waits for its run (API Gateway's limit is 30 s).
  timeoutSeconds: 29,
  access: { table: 'RW', queues: ['agent-test-run'] },
});

export const listAgentVersions = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/agents/{id}/versions', operationId: 'listAgentVersions', tag: versionsTag, auth: true,
  summary: 'List an agent\'s published versions, newest first',
  entry: 'functions/agents/versions-list.ts', params: IdParams, query: AgentTestListQuery, list: true, access: { table: 'R' },
});

export const getAgentVersion = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/agents/{id}/versions/{version}', operationId: 'getAgentVersion', tag: versionsTag, auth: true,
  summary: 'Get one published version with its frozen config',
  entry: 'functions/agents/versions-get.ts', params: AgentVersionParams, access: { table: 'R' },
});

export const getTrafficSplitResults = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/agents/{id}/traffic-split/results', operationId: 'getTrafficSplitResults', tag: versionsTag, auth: true,
  summary: 'Results of the agent\'s traffic split (current, else the one that ended last, or `traffic_split_id`) per variant: conversations, success rate, average duration, reply p50, ends and analysis fields; each variant\'s success rate against the first with the difference, its 95% confidence interval and the two-proportion z-test\'s p-value; `from`/`to` UTC days (default the split\'s own)',
  entry: 'functions/agents/traffic-split-results.ts', params: IdParams, query: TrafficSplitResultsQuery,
  errors: { 404: 'The agent is not the organization\'s, or it has no such traffic split (none set and none ended).' },
  access: { table: 'R' },
});

// ---- Tests ----

export const createAgentTest = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/agents/{id}/tests', operationId: 'createAgentTest', tag: versionsTag, auth: true,
  summary: 'Create a test: a scripted or simulated user, tool mocks and criteria',
  entry: 'functions/agents/tests-create.ts', params: IdParams, body: CreateAgentTestBody,
  successMessage: 'Test created successfully', errors: { 422: 'The agent has 200 tests already.' }, access: { table: 'RW' },
});

export const listAgentTests = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/agents/{id}/tests', operationId: 'listAgentTests', tag: versionsTag, auth: true,
  summary: 'List an agent\'s tests', entry: 'functions/agents/tests-list.ts', params: IdParams, query: AgentTestListQuery, list: true, access: { table: 'R' },
});

export const getAgentTest = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/agents/{id}/tests/{test_id}', operationId: 'getAgentTest', tag: versionsTag, auth: true,
  summary: 'Get one test', entry: 'functions/agents/tests-get.ts', params: AgentTestParams, access: { table: 'R' },
});

export const updateAgentTest = /* @__PURE__ */ defineOperation({
  method: 'PATCH', path: '/api/v1/agents/{id}/tests/{test_id}', operationId: 'updateAgentTest', tag: versionsTag, auth: true,
  summary: 'Update a test; only supplied fields change', entry: 'functions/agents/tests-update.ts', params: AgentTestParams, body: UpdateAgentTestBody,
  successMessage: 'Test updated successfully', access: { table: 'RW' },
});

export const deleteAgentTest = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/agents/{id}/tests/{test_id}', operationId: 'deleteAgentTest', tag: versionsTag, auth: true,
  summary: 'Delete a test', entry: 'functions/agents/tests-delete.ts', params: AgentTestParams, successMessage: 'Test deleted successfully', access: { table: 'RW' },
});

// ---- Test runs ----

export const startAgentTestRun = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/agents/{id}/test-runs', operationId: 'startAgentTestRun', tag: versionsTag, auth: true,
  summary: 'Run tests (default all) against a version or the draft; answers the run, queued',
  entry: 'functions/agents/test-runs-create.ts', params: IdParams, body: StartTestRunBody, bodyOptional: true,
  successMessage: 'Test run queued', errors: { 422: 'The agent has no tests.' }, access: { table: 'RW', queues: ['agent-test-run'] },
});

export const listAgentTestRuns = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/agents/{id}/test-runs', operationId: 'listAgentTestRuns', tag: versionsTag, auth: true,
  summary: 'List an agent\'s test runs, newest first (without their results)',
  entry: 'functions/agents/test-runs-list.ts', params: IdParams, query: AgentTestListQuery, list: true, access: { table: 'R' },
});

export const getAgentTestRun = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/agents/{id}/test-runs/{run_id}', operationId: 'getAgentTestRun', tag: versionsTag, auth: true,
  summary: 'Get a test run with a page of its results (`results_limit`, `results_cursor`)', entry: 'functions/agents/test-runs-get.ts', params: AgentTestRunParams, query: AgentTestRunQuery, access: { table: 'R' },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  createAgent.response = Agent;
  listAgents.response = Agent;
  getAgent.response = Agent;
  updateAgent.response = Agent;
  updateAgentStatus.response = Agent;
  publishAgentVersion.response = AgentVersion;
  listAgentVersions.response = AgentVersion;
  getAgentVersion.response = AgentVersion;
  getTrafficSplitResults.response = TrafficSplitResults;
  createAgentTest.response = AgentTest;
  listAgentTests.response = AgentTest;
  getAgentTest.response = AgentTest;
  updateAgentTest.response = AgentTest;
  startAgentTestRun.response = TestRun;
  listAgentTestRuns.response = TestRun;
  getAgentTestRun.response = TestRun;
}
