import { http } from '../../shared/http/handler';
import { sendWidgetChatMessage as op } from '../../shared/domain/widgets/operations';
import { sendWidgetMessage } from '../../shared/domain/widgets/public-turns';
import { publicCall } from '../../shared/domain/widgets/public-call';

export const handler = http(op, ({ params, body, event, setHeader }) => sendWidgetMessage(publicCall(params.id, event, setHeader), params.chat_id, body.content));
