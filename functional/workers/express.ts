/**
 * An Express service (the Cloud Run shape): `idempotentHttp` behind express.json(), for the
 * supplier's pushes and, in transaction mode, the transactional sink's; the step storm's
 * pushes go to its three-step handler (./steps.ts).
 */
import express from "express";
import { ordersHttp } from "./guarded.js";
import { isStepsPush, stepsHttp } from "./steps.js";

const app = express();
app.use(express.json({ limit: "1mb" }));
const orders = ordersHttp();
const steps = stepsHttp();
app.post("/{*path}", (req, res) => (isStepsPush(req.path) ? steps : orders)(req, res));
app.listen(Number(process.env.PORT), "127.0.0.1");
