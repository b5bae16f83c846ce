/**
 * CloudWatch metrics, X-Ray and CloudWatch Logs for the local AWS endpoint: accepted and
 * evaluated when a function calls them, never served silently.
 *
 * It mirrors: CloudWatch PutMetricData (signing name `monitoring`) in its JSON 1.0 form
 * (`GraniteServiceVersion20100801.PutMetricData`) and its query form (`Action=PutMetricData`),
 * allowed only with cloudwatch:PutMetricData on `*` and then recorded in memory; X-Ray
 * PutTraceSegments (`POST /TraceSegments`, xray:PutTraceSegments on `*`); Logs CreateLogGroup,
 * CreateLogStream and PutLogEvents (JSON 1.1, on the log group's or stream's ARN). What it
 * refuses: CloudWatch's RPC v2 CBOR form and every other operation (UnknownOperationException).
 */
import { AwsServiceError, escapeXml, jsonRpcService, sendJson, sendRestJsonError, type AwsCall } from './protocol';

/** One allowed PutMetricData call. */
export interface RecordedMetrics {
  roleName: string;
  namespace: string;
  /** MetricData as sent (JSON form), or the query form's parameters. */
  data: unknown;
}

type Service = (call: AwsCall) => Promise<void>;

/** The handlers of `monitoring`, `xray` and `logs`, by signing name. */
export function telemetryServices(metrics: RecordedMetrics[]): Record<string, Service> {
  const metricsJson = jsonRpcService({
    targetPrefix: 'GraniteServiceVersion20100801',
    label: 'CloudWatch',
    contentType: 'application/x-amz-json-1.0',
    unknownOperation: { queryError: ['UnknownOperationException', 'Sender'] },
    operations: {
      PutMetricData(call, input) {
        const denial = call.authorize('cloudwatch:PutMetricData', '*');
        if (denial) throw new AwsServiceError('AccessDenied', denial.message!, { status: 403, queryError: ['AccessDenied', 'Sender'] });
        metrics.push({ roleName: call.roleName, namespace: String(input.Namespace ?? ''), data: input.MetricData });
        return {};
      },
    },
  });

  const logs = jsonRpcService({
    targetPrefix: 'Logs_20140328',
    label: 'CloudWatch Logs',
    contentType: 'application/x-amz-json-1.1',
    operations: Object.fromEntries(
      ['CreateLogGroup', 'CreateLogStream', 'PutLogEvents'].map((operation) => [
        operation,
        (call: AwsCall, input: Record<string, unknown>) => {
          const group = `arn:aws:logs:${call.region}:${call.accountId}:log-group:${String(input.logGroupName ?? '')}`;
          const resource = operation === 'CreateLogGroup' ? group : `${group}:log-stream:${String(input.logStreamName ?? '')}`;
          const denial = call.authorize(`logs:${operation}`, resource);
          if (denial) throw new AwsServiceError('AccessDeniedException', denial.message!);
          return operation === 'PutLogEvents' ? { nextSequenceToken: '0' } : {};
        },
      ]),
    ),
  });

  const xray: Service = async (call) => {
    if (call.req.method !== 'POST' || call.url.pathname !== '/TraceSegments') {
      call.log(`UnknownOperationException: the local AWS endpoint does not serve X-Ray ${call.req.method} ${call.url.pathname}`);
      return sendRestJsonError(call, 400, 'UnknownOperationException', `The local AWS endpoint does not serve X-Ray ${call.req.method} ${call.url.pathname}.`);
    }
    await call.body();
    const denial = call.authorize('xray:PutTraceSegments', '*');
    if (denial) return sendRestJsonError(call, 403, 'AccessDeniedException', denial.message!);
    sendJson(call, { body: { UnprocessedTraceSegments: [] } }, 'application/json');
  };

  const monitoring: Service = async (call) => {
    if (call.req.headers['x-amz-target']) return metricsJson(call);
    const form = new URLSearchParams((await call.body()).toString('utf8'));
    const action = form.get('Action') ?? '';
    if (action !== 'PutMetricData') return queryAnswer(call, 400, 'UnknownOperationException', `The local AWS endpoint does not serve CloudWatch ${action || call.url.pathname}.`);
    const denial = call.authorize('cloudwatch:PutMetricData', '*');
    if (denial) return queryAnswer(call, 403, 'AccessDenied', denial.message!);
    metrics.push({ roleName: call.roleName, namespace: form.get('Namespace') ?? '', data: Object.fromEntries(form) });
    queryAnswer(call, 200);
  };

  return { monitoring, xray, logs };
}

/** CloudWatch's query-protocol answer: PutMetricDataResponse, or ErrorResponse. */
function queryAnswer(call: AwsCall, status: number, code?: string, message?: string): void {
  const xml = code
    ? `<ErrorResponse xmlns="http://monitoring.amazonaws.com/doc/2010-08-01/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${escapeXml(message ?? '')}</Message></Error><RequestId>${call.requestId}</RequestId></ErrorResponse>`
    : `<PutMetricDataResponse xmlns="http://monitoring.amazonaws.com/doc/2010-08-01/"><ResponseMetadata><RequestId>${call.requestId}</RequestId></ResponseMetadata></PutMetricDataResponse>`;
  if (code === 'UnknownOperationException') call.log(`UnknownOperationException: ${message}`);
  call.res.writeHead(status, { 'content-type': 'text/xml', 'x-amzn-requestid': call.requestId });
  call.res.end(xml);
}
