/**
 * The stack tier fails when it should (issue 41, "Done when"): the synthesized assembly, copied
 * and broken the ways a change to lib/ breaks a deployment, makes the flow that needs it fail, and
 * fail precisely as AWS would make it fail:
 * (a) a function that sends to a queue without its SQS SendMessage grant: AccessDenied, a 5xx;
 * (b) a function without one variable of its environment (TABLE_NAME): a 5xx naming it;
 * (c) the Realtime key secret without its `api_key` key: the voice task never starts (ECS's
 *     ResourceInitializationError);
 * (d) a bundle that does not load: the function's init fails (Runtime.ImportModuleError), a 5xx.
 * Only the templates change (and the one broken bundle); the other assets are the original's, linked.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { resolveAssembly, stackTemplateFile, type RawTemplate, type ResolvedAssembly, type Resource } from '../../shared/local/stack/template';
import { assemblyDir } from './settings';
import { startStackTier, UNCLEAN_LINE, type StackTier } from './support';

const PSEUDO = { region: 'us-east-1', accountId: '000000000000' };

/** A copy of the assembly: its files copied, its asset directories linked (a sabotage copies the one it breaks). */
function copyAssembly(from: string): string {
  const to = mkdtempSync(join(tmpdir(), 'vap-sabotage-'));
  for (const name of readdirSync(from)) {
    if (name === 'synth.lock') continue;
    const path = join(from, name);
    if (statSync(path).isDirectory()) symlinkSync(path, join(to, name), 'dir');
    else cpSync(path, join(to, name));
  }
  return to;
}

/** The template file a resolved resource comes from (the parent's, or its nested stack's asset). */
function templateFileOf(assembly: ResolvedAssembly, resource: Resource): string {
  if (resource.stack === 'parent') return basename(stackTemplateFile(assembly.dir).file);
  const nested = assembly.resources.find((r) => r.type === 'AWS::CloudFormation::Stack' && r.logicalId === resource.stack);
  const path = nested?.metadata['aws:asset:path'] as string | undefined;
  if (!path) throw new Error(`no template file for nested stack ${resource.stack}`);
  return path;
}

function editTemplate(dir: string, file: string, edit: (template: RawTemplate) => void): void {
  const template = JSON.parse(readFileSync(join(dir, file), 'utf8')) as RawTemplate;
  edit(template);
  writeFileSync(join(dir, file), JSON.stringify(template));
}

/** The function behind an HTTP API route (`POST /api/v1/rag/ingest`). */
function functionOfRoute(assembly: ResolvedAssembly, routeKey: string): Resource {
  const route = assembly.ofType('AWS::ApiGatewayV2::Route').find((r) => r.props.RouteKey === routeKey);
  if (!route) throw new Error(`no route ${routeKey} in the template`);
  const integration = assembly.ofType('AWS::ApiGatewayV2::Integration').find((i) => i.ref === String(route.props.Target).replace(/^integrations\//, ''))!;
  // A Lambda ARN, or API Gateway's `…:lambda:path/…/functions/<arn>/invocations` form of it.
  const uri = String(integration.props.IntegrationUri);
  const arn = /\/functions\/(.+)\/invocations$/.exec(uri)?.[1] ?? uri;
  return assembly.byRef(arn)!;
}

const original = () => resolveAssembly(assemblyDir(), PSEUDO);

interface Sabotage {
  dir: string;
  /** The function of each sabotage, its logical id and role. */
  queueSender: { fn: Resource; role: Resource; queueVariable: string };
  noTable: Resource;
  broken: Resource;
}

/** (a), (b) and (d) in one copy: three functions, three routes, none on another's path. */
function sabotage(): Sabotage {
  const assembly = original();
  const dir = copyAssembly(assembly.dir);

  // (a) The knowledge base's ingest sends its work to a queue: its role loses sqs:SendMessage.
  const sender = functionOfRoute(assembly, 'POST /api/v1/rag/ingest');
  const queueVariable = Object.keys(sender.props.Environment?.Variables ?? {}).find((k) => k.startsWith('QUEUE_URL_RAG'));
  if (!queueVariable) throw new Error(`${sender.logicalId} names no queue: pick another sender`);
  const role = assembly.byRef(String(sender.props.Role))!;
  const policies = assembly.ofType('AWS::IAM::Policy').filter((p) => (p.props.Roles as string[]).includes(role.ref));
  let removed = 0;
  for (const policy of policies) {
    editTemplate(dir, templateFileOf(assembly, policy), (t) => {
      const doc = t.Resources[policy.logicalId]!.Properties!.PolicyDocument as { Statement: { Action: string | string[] }[] };
      doc.Statement = doc.Statement.flatMap((s) => {
        const actions = ([] as string[]).concat(s.Action);
        const kept = actions.filter((a) => a !== 'sqs:SendMessage');
        removed += actions.length - kept.length;
        return kept.length ? [{ ...s, Action: kept.length === 1 ? kept[0]! : kept }] : [];
      });
    });
  }
  if (!removed) throw new Error(`${sender.logicalId}'s role ${role.logicalId} has no sqs:SendMessage to remove`);

  // (b) The contacts list's function loses TABLE_NAME.
  const noTable = functionOfRoute(assembly, 'GET /api/v1/contacts');
  editTemplate(dir, templateFileOf(assembly, noTable), (t) => {
    const variables = t.Resources[noTable.logicalId]!.Properties!.Environment.Variables as Record<string, unknown>;
    if (!('TABLE_NAME' in variables)) throw new Error(`${noTable.logicalId} has no TABLE_NAME`);
    delete variables.TABLE_NAME;
  });

  // (d) The tools list's bundle imports a package the bundle does not hold.
  const broken = functionOfRoute(assembly, 'GET /api/v1/tools');
  const assetPath = broken.metadata['aws:asset:path'] as string;
  const brokenAsset = `${assetPath}.sabotaged`;
  cpSync(join(assembly.dir, assetPath), join(dir, brokenAsset), { recursive: true, dereference: true });
  writeFileSync(join(dir, brokenAsset, 'index.mjs'), "import 'sabotaged-missing-package';\nexport const handler = async () => ({ statusCode: 200 });\n");
  editTemplate(dir, templateFileOf(assembly, broken), (t) => {
    t.Resources[broken.logicalId]!.Metadata!['aws:asset:path'] = brokenAsset;
  });

  return { dir, queueSender: { fn: sender, role, queueVariable }, noTable, broken };
}

describe('a sabotaged assembly', () => {
  let s: Sabotage;
  let tier: StackTier | undefined;
  beforeAll(async () => {
    s = sabotage();
    tier = await startStackTier({ assemblyDir: s.dir, runTasks: false });
  }, 120_000);
  afterAll(async () => {
    await tier?.stop();
    if (s) rmSync(s.dir, { recursive: true, force: true });
  });

  it('(a) a queue sender without sqs:SendMessage: the call is refused by IAM (AccessDenied recorded), the request fails', async () => {
    const { api, stack } = tier!;
    const kb = await api('POST', '/api/v1/rag/knowledge-bases', { body: { name: 'Sabotaged' } });
    expect(kb.status).toBe(200);
    const ingest = await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kb.body.data.id, title: 'Hours', text: 'Open at 9.' } });

    expect(ingest.status).toBeGreaterThanOrEqual(500);
    // Refused on the ingest queue (more than once when the send is retried); nothing else refused
    // but the other queues its environment names (the API-key usage it reports on the side).
    const variables = s.queueSender.fn.props.Environment.Variables as Record<string, string>;
    const queueArn = (variable: string) => `arn:aws:sqs:us-east-1:000000000000:${variables[variable]!.split('/').pop()}`;
    const named = Object.keys(variables).filter((k) => k.startsWith('QUEUE_URL_')).map(queueArn);
    const refused = new Set(stack.aws.denials.map((d) => `${d.roleName} ${d.action} ${d.decision}`));
    expect(refused).toEqual(new Set([`${s.queueSender.role.ref} sqs:SendMessage ImplicitDeny`]));
    expect(stack.aws.denials.map((d) => d.resource)).toContain(queueArn(s.queueSender.queueVariable));
    expect(stack.aws.denials.filter((d) => !named.includes(d.resource))).toEqual([]);
    expect(stack.logs.filter((l) => /^AccessDenied: .* is not authorized to perform: sqs:SendMessage on resource: /.test(l)).length).toBe(stack.aws.denials.length);
    // The function logged its failure (the unclean-log check of the other files sees it).
    expect(stack.logs.some((l) => l.startsWith(`[${s.queueSender.fn.logicalId}]`) && /"level":"ERROR"/.test(l))).toBe(true);
  });

  it('(b) a function without TABLE_NAME: its request fails and its log names the variable', async () => {
    const { api, stack } = tier!;
    const listed = await api('GET', '/api/v1/contacts');

    expect(listed.status).toBeGreaterThanOrEqual(500);
    const lines = stack.logs.filter((l) => l.startsWith(`[${s.noTable.logicalId}]`));
    expect(lines.some((l) => /TABLE_NAME/.test(l))).toBe(true);
    expect(lines.some((l) => UNCLEAN_LINE.test(l))).toBe(true);
  });

  it('(d) a bundle that does not load: init fails with Runtime.ImportModuleError, the request fails', async () => {
    const { api, stack } = tier!;
    const listed = await api('GET', '/api/v1/tools');

    expect(listed.status).toBeGreaterThanOrEqual(500);
    await expect(stack.lambda.warm(s.broken.ref)).rejects.toMatchObject({ name: 'Runtime.ImportModuleError', message: expect.stringContaining('sabotaged-missing-package') });
    // The other functions of the copy load: the sabotage is that bundle's alone.
    await expect(stack.lambda.warm(functionOfRoute(stack.assembly, 'GET /api/v1/agents').ref)).resolves.toBeUndefined();
  });
});

it('(c) the Realtime key secret without its api_key: the voice task does not start (ECS ResourceInitializationError)', async () => {
  const started = startStackTier({ secretValues: { VoiceRealtimeApiKey: '{}' } });
  await expect(started).rejects.toThrow(/ResourceInitializationError: .*did not contain json key api_key/);
}, 120_000);
