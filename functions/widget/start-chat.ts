import { http } from '../../shared/http/handler';
import { startWidgetChat as op } from '../../shared/domain/widgets/operations';
import { startWidgetChat } from '../../shared/domain/widgets/public-chats';
import { publicCall } from '../../shared/domain/widgets/public-call';

export const handler = http(op, ({ params, body, event, setHeader }) => startWidgetChat(publicCall(params.id, event, setHeader), body ?? {}));
