export { idempotent } from "./cloud-event.js";
export type { RequestTimeoutOptions } from "./deadline.js";
export { gatewayDisabled } from "./disabled.js";
export { cloudEventKey, cloudEventSourceIdKey } from "./formats/cloud-event-attributes.js";
export {
  type CloudEventAttributes,
  type CloudEventLike,
  cloudEventMessageId,
  MESSAGE_PUBLISHED_TYPE,
  type ParsedMessage,
  type PubSubMessageLike,
  type PushMessage,
  parseCloudEvent,
  parseEnvelope,
  parsePubSubMessage,
  parsePushBody,
} from "./formats/parsed-message.js";
export {
  defaultMessageKey,
  type HttpHeadersLike,
  type PushRequestHeaders,
  parsePushRequest,
  TRANSPORT_HEADERS,
} from "./formats/push-request.js";
export type { GatewayOptions, TransactionalGatewayOptions } from "./gateway.js";
export { idempotentHttp } from "./http.js";
export {
  DEFAULT_MAX_BODY_BYTES,
  type HttpGatewayOptions,
  type HttpRequestLike,
  type HttpResponseLike,
  type PushRequest,
  type Req,
  type Res,
} from "./http-types.js";
export { idempotentMessage } from "./pull.js";
