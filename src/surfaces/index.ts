export {
  type CloudEventLike,
  cloudEventMessageId,
  MESSAGE_PUBLISHED_TYPE,
  type PubSubMessageLike,
  type PushMessage,
  parseCloudEvent,
  parseEnvelope,
  parsePubSubMessage,
  parsePushBody,
} from "./envelope.js";
export {
  DEFAULT_MAX_BODY_BYTES,
  type GatewayOptions,
  gatewayDisabled,
  type HeaderBag,
  type HttpGatewayOptions,
  idempotent,
  idempotentHttp,
  idempotentMessage,
  type PushRequest,
  type Req,
  type Res,
} from "./gateway.js";
