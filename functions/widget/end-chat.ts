import { http } from '../../shared/http/handler';
import { endWidgetChat as op } from '../../shared/domain/widgets/operations';
import { endWidgetChat } from '../../shared/domain/widgets/public-chats';
import { publicCall } from '../../shared/domain/widgets/public-call';

export const handler = http(op, ({ params, event, setHeader }) => endWidgetChat(publicCall(params.id, event, setHeader), params.chat_id));
