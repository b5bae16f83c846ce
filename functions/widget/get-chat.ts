import { http } from '../../shared/http/handler';
import { getWidgetChat as op } from '../../shared/domain/widgets/operations';
import { getWidgetChat } from '../../shared/domain/widgets/public-chats';
import { publicCall } from '../../shared/domain/widgets/public-call';

export const handler = http(op, ({ params, event, setHeader }) => getWidgetChat(publicCall(params.id, event, setHeader), params.chat_id));
