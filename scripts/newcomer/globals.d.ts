// The reader's own code the README's quick starts call without defining.
declare function placeOrder(order: unknown, options: { idempotencyKey: string }): Promise<void>;
declare function readPo(poId: string): Promise<{ history: string[] }>;
declare function writePo(poId: string, po: { history: string[] }): Promise<void>;
declare function chargeCard(orderId: string): Promise<{ chargeId: string }>;
declare function bookShipment(orderId: string, chargeId: string): Promise<{ trackingId: string }>;
declare function sendEmail(orderId: string, trackingId: string): Promise<void>;
