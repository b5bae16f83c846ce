import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * docs/operations.md's production deploy, read as the commands an operator types (issue 41: "the
 * Deploy section is tested"): the block after "This block is what CI runs". Its `cdk deploy`
 * command's variables and `-c` context are what the stack tier synthesizes with, and its
 * `put-secret-value` lines name the secrets the tier puts. Anything else in the block that the
 * tier cannot do is named, so the block and the tier cannot drift apart silently.
 */
export interface DeployDoc {
  /** The variables before `npx cdk deploy`. */
  env: Record<string, string>;
  /** `-c key=value` after it. */
  context: Record<string, string>;
  /** The secrets put after the deploy, by the logical-id prefix the doc names (`<LlmApiKey secret>`). */
  secrets: string[];
  /** The block's other commands (each must be one the tier stands in for). */
  others: string[];
}

const DOC = join(__dirname, '..', '..', 'docs', 'operations.md');
const MARKER = '**This block is what CI runs**';

export function readDeployDoc(text = readFileSync(DOC, 'utf8')): DeployDoc {
  const at = text.indexOf(MARKER);
  if (at < 0) throw new Error(`docs/operations.md has no "${MARKER}" paragraph`);
  const block = /```bash\n([\s\S]*?)```/.exec(text.slice(at))?.[1];
  if (!block) throw new Error('docs/operations.md: no bash block after the production deploy paragraph');
  const commands = block
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
  const deploy = commands.find((c) => /\bnpx cdk deploy\b/.test(c));
  if (!deploy) throw new Error('docs/operations.md: the production block has no `npx cdk deploy`');
  const [before, after] = deploy.split(/\bnpx cdk deploy\b/) as [string, string];
  const env: Record<string, string> = {};
  for (const word of before.trim().split(/\s+/).filter(Boolean)) {
    const m = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(word);
    if (!m) throw new Error(`docs/operations.md: "${word}" before cdk deploy is not VAR=value`);
    env[m[1]!] = m[2]!;
  }
  const context: Record<string, string> = {};
  const rest = after.trim().split(/\s+/).filter(Boolean);
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] !== '-c' || !rest[i + 1]?.includes('=')) throw new Error(`docs/operations.md: cdk deploy argument "${rest[i]}" is not -c key=value`);
    const [k, ...v] = rest[++i]!.split('=');
    context[k!] = v.join('=');
  }
  const secrets: string[] = [];
  const others: string[] = [];
  for (const c of commands) {
    if (c === deploy) continue;
    const put = /^aws secretsmanager put-secret-value --secret-id <(\w+) secret>/.exec(c);
    if (put) secrets.push(put[1]!);
    else others.push(c);
  }
  return { env, context, secrets, others };
}
