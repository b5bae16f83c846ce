/**
 * A small IAM identity-policy evaluator for the local stack runner: it decides, as IAM does for
 * one principal's identity-based statements, whether an action on a resource is allowed.
 *
 * What it mirrors of AWS: explicit Deny wins over any Allow; otherwise an Allow whose Action
 * (or NotAction) matches the action (case-insensitive, `*` and `?` wildcards), whose Resource
 * (or NotResource) matches the ARN (case-sensitive, wildcards) and whose every condition holds
 * allows it; otherwise the request is implicitly denied. Conditions: the String*, Arn*, Bool,
 * Numeric*, Date* and Null operators, the `IfExists` suffix and the `ForAllValues:` /
 * `ForAnyValue:` set qualifiers, with IAM's rules for missing keys (a plain operator fails, a
 * negated one holds, `IfExists` holds, `ForAllValues` holds, `ForAnyValue` fails). Condition
 * key names are case-insensitive, their values case-sensitive (except the IgnoreCase operators).
 *
 * What it refuses: any other operator (BinaryEquals, IpAddress, …) throws an error naming it,
 * and `unsupportedConditionOperators` lets the runner report such statements at start-up.
 * Policy variables (`${aws:username}`), resource-based policies, permission boundaries, SCPs and
 * session policies are not modelled: the runner feeds only the roles' identity statements, with
 * every CloudFormation intrinsic already resolved to a string.
 *
 * Why not `@cloud-copilot/iam-simulate`: it is AGPL-3.0, which would bind the distribution of
 * this Apache-2.0 project, and we only need the statement forms our own stack emits (CDK grants:
 * Allow statements with actions, ARNs and a few String/ForAllValues conditions).
 */

export type Effect = 'Allow' | 'Deny';
export type StringOrList = string | string[];
/** A policy value as CloudFormation may hand it over (booleans and numbers become strings). */
export type ConditionValue = string | number | boolean | Array<string | number | boolean>;

/** One identity-policy statement, every intrinsic already resolved to a string. */
export interface ResolvedStatement {
  Sid?: string;
  Effect: Effect;
  Action?: StringOrList;
  NotAction?: StringOrList;
  Resource?: StringOrList;
  NotResource?: StringOrList;
  Condition?: Record<string, Record<string, ConditionValue>>;
}

/** The request's condition keys (e.g. `dynamodb:LeadingKeys`, `s3:prefix`), looked up case-insensitively. */
export type RequestContext = Record<string, StringOrList | undefined>;

export type Decision = 'Allowed' | 'ExplicitDeny' | 'ImplicitDeny';

/** Thrown for a condition operator this evaluator does not implement. */
export class UnsupportedConditionOperatorError extends Error {
  constructor(readonly operator: string) {
    super(`Unsupported IAM condition operator "${operator}": the local IAM evaluator (shared/local/stack/iam.ts) does not implement it.`);
    this.name = 'UnsupportedConditionOperatorError';
  }
}

/** IAM's decision for `action` on `resource` under `statements` (explicit deny, allow, or implicit deny). */
export function evaluatePolicy(statements: readonly ResolvedStatement[], action: string, resource: string, context: RequestContext = {}): Decision {
  const keys = lowerKeys(context);
  let allowed = false;
  for (const statement of statements) {
    if (!statementApplies(statement, action, resource, keys)) continue;
    if (statement.Effect === 'Deny') return 'ExplicitDeny';
    allowed = true;
  }
  return allowed ? 'Allowed' : 'ImplicitDeny';
}

/** True when `statements` allow `action` on `resource` (see evaluatePolicy). */
export function isAllowed(statements: readonly ResolvedStatement[], action: string, resource: string, context: RequestContext = {}): boolean {
  return evaluatePolicy(statements, action, resource, context) === 'Allowed';
}

/** The condition operators in `statements` this evaluator cannot evaluate (deduplicated, as written). */
export function unsupportedConditionOperators(statements: readonly ResolvedStatement[]): string[] {
  const found = new Set<string>();
  for (const statement of statements) {
    for (const operator of Object.keys(statement.Condition ?? {})) {
      try {
        parseOperator(operator);
      } catch {
        found.add(operator);
      }
    }
  }
  return [...found];
}

function statementApplies(statement: ResolvedStatement, action: string, resource: string, context: Map<string, string[]>): boolean {
  const actionMatches = (patterns: StringOrList | undefined) => list(patterns).some((p) => globMatch(p, action, true));
  const resourceMatches = (patterns: StringOrList | undefined) => list(patterns).some((p) => globMatch(p, resource, false));
  const actionOk = statement.NotAction !== undefined ? !actionMatches(statement.NotAction) : actionMatches(statement.Action);
  const resourceOk = statement.NotResource !== undefined ? !resourceMatches(statement.NotResource) : resourceMatches(statement.Resource);
  return actionOk && resourceOk && conditionsHold(statement.Condition, context);
}

function conditionsHold(condition: ResolvedStatement['Condition'], context: Map<string, string[]>): boolean {
  for (const [operator, entries] of Object.entries(condition ?? {})) {
    const parsed = parseOperator(operator);
    for (const [key, policyValues] of Object.entries(entries)) {
      if (!conditionHolds(parsed, context.get(key.toLowerCase()), list(policyValues).map(String))) return false;
    }
  }
  return true;
}

interface ParsedOperator {
  qualifier?: 'ForAllValues' | 'ForAnyValue';
  ifExists: boolean;
  /** Whether one context value satisfies the operator against the policy values. */
  test(value: string, policyValues: string[]): boolean;
  /** Negated operators (StringNotEquals, …) hold when the key is missing. */
  negated: boolean;
  isNull: boolean;
}

type Matcher = (value: string, policy: string) => boolean;

const numeric = (compare: (a: number, b: number) => boolean): Matcher => (value, policy) => {
  const [a, b] = [Number(value), Number(policy)];
  return Number.isFinite(a) && Number.isFinite(b) && compare(a, b);
};
const date = (compare: (a: number, b: number) => boolean): Matcher => (value, policy) => {
  const [a, b] = [toEpochMs(value), toEpochMs(policy)];
  return Number.isFinite(a) && Number.isFinite(b) && compare(a, b);
};

/** The positive operators; each `…Not…` form is the negation of one of these. */
const MATCHERS: Record<string, Matcher> = {
  StringEquals: (v, p) => v === p,
  StringEqualsIgnoreCase: (v, p) => v.toLowerCase() === p.toLowerCase(),
  StringLike: (v, p) => globMatch(p, v, false),
  ArnEquals: (v, p) => arnMatch(p, v),
  ArnLike: (v, p) => arnMatch(p, v),
  Bool: (v, p) => v.toLowerCase() === p.toLowerCase(),
  NumericEquals: numeric((a, b) => a === b),
  NumericLessThan: numeric((a, b) => a < b),
  NumericLessThanEquals: numeric((a, b) => a <= b),
  NumericGreaterThan: numeric((a, b) => a > b),
  NumericGreaterThanEquals: numeric((a, b) => a >= b),
  DateEquals: date((a, b) => a === b),
  DateLessThan: date((a, b) => a < b),
  DateLessThanEquals: date((a, b) => a <= b),
  DateGreaterThan: date((a, b) => a > b),
  DateGreaterThanEquals: date((a, b) => a >= b),
};
const NEGATIONS: Record<string, string> = {
  StringNotEquals: 'StringEquals',
  StringNotEqualsIgnoreCase: 'StringEqualsIgnoreCase',
  StringNotLike: 'StringLike',
  ArnNotEquals: 'ArnEquals',
  ArnNotLike: 'ArnLike',
  NumericNotEquals: 'NumericEquals',
  DateNotEquals: 'DateEquals',
};

function parseOperator(operator: string): ParsedOperator {
  const qualified = /^(ForAllValues|ForAnyValue):(.+)$/.exec(operator);
  const qualifier = qualified?.[1] as ParsedOperator['qualifier'];
  let name = qualified ? qualified[2]! : operator;
  const ifExists = name.endsWith('IfExists');
  if (ifExists) name = name.slice(0, -'IfExists'.length);
  if (name === 'Null' && !ifExists && !qualifier) {
    return { ifExists, negated: false, isNull: true, test: () => false };
  }
  const positive = MATCHERS[name];
  const negatedOf = NEGATIONS[name];
  if (positive) return { qualifier, ifExists, negated: false, isNull: false, test: (v, ps) => ps.some((p) => positive(v, p)) };
  if (negatedOf) {
    const base = MATCHERS[negatedOf]!;
    return { qualifier, ifExists, negated: true, isNull: false, test: (v, ps) => !ps.some((p) => base(v, p)) };
  }
  throw new UnsupportedConditionOperatorError(operator);
}

function conditionHolds(op: ParsedOperator, values: string[] | undefined, policyValues: string[]): boolean {
  const present = values !== undefined && values.length > 0;
  // Null: "true" asks for the key to be absent, "false" for it to be present.
  if (op.isNull) return policyValues.some((p) => (p.toLowerCase() === 'true') === !present);
  if (op.qualifier === 'ForAllValues') return !present || values.every((v) => op.test(v, policyValues));
  if (op.qualifier === 'ForAnyValue') return present ? values.some((v) => op.test(v, policyValues)) : op.ifExists;
  if (!present) return op.ifExists || op.negated;
  // A single-valued operator given a multivalued key: IAM compares each value (any may satisfy a positive
  // operator; a negated one must hold for all of them).
  return op.negated ? values.every((v) => op.test(v, policyValues)) : values.some((v) => op.test(v, policyValues));
}

/** ArnLike/ArnEquals: the six colon-separated parts are compared one by one, each with wildcards. */
function arnMatch(pattern: string, arn: string): boolean {
  const split = (s: string) => {
    const parts = s.split(':');
    return parts.length < 6 ? undefined : [...parts.slice(0, 5), parts.slice(5).join(':')];
  };
  const [p, a] = [split(pattern), split(arn)];
  if (!p || !a) return pattern === '*' || pattern === arn;
  return p.every((part, i) => globMatch(part, a[i]!, false));
}

const globCache = new Map<string, RegExp>();

/** IAM's wildcard match: `*` any run of characters (colons and slashes included), `?` one character. */
export function globMatch(pattern: string, value: string, ignoreCase: boolean): boolean {
  if (pattern === '*') return true;
  const cacheKey = `${ignoreCase ? 'i' : 's'}${pattern}`;
  let regex = globCache.get(cacheKey);
  if (!regex) {
    const body = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
    regex = new RegExp(`^${body}$`, ignoreCase ? 'is' : 's');
    globCache.set(cacheKey, regex);
  }
  return regex.test(value);
}

function toEpochMs(value: string): number {
  return /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value);
}

function list<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

function lowerKeys(context: RequestContext): Map<string, string[]> {
  const keys = new Map<string, string[]>();
  for (const [key, value] of Object.entries(context)) if (value !== undefined) keys.set(key.toLowerCase(), list(value));
  return keys;
}
