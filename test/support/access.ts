import { runAs } from '../../shared/access/enforce';
import type { Access } from '../../shared/http/operation';
import { operations } from '../../shared/http/registry';
import { jobs } from '../../shared/jobs/registry';

/** An operation or job declaration (or its operation id / job name in the registries). */
export type FunctionRef = string | { operationId: string; access: Access } | { name: string; access: Access };

/**
 * Runs `work` with the grants of one function, as the local runtime runs each invocation: a
 * table write from a read-only operation, a send to an undeclared queue or a bucket key outside
 * its prefixes fails with AccessDeniedException, as it would in AWS. Test setup that stands in
 * for other functions (or the admin command) stays outside, where nothing is checked.
 *
 *   const res = await asFunction('queryKnowledgeBase', () => handler(event, lambdaContext));
 */
export function asFunction<T>(ref: FunctionRef, work: () => T): T {
  return runAs(resolve(ref), work);
}

function resolve(ref: FunctionRef): { name: string; access: Access } {
  if (typeof ref !== 'string') return 'operationId' in ref ? { name: ref.operationId, access: ref.access } : ref;
  const op = operations.find((o) => o.operationId === ref);
  if (op) return { name: op.operationId, access: op.access };
  const job = jobs.find((j) => j.name === ref);
  if (job) return { name: job.name, access: job.access };
  throw new Error(`No operation or job named "${ref}" in the registries.`);
}
