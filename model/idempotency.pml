/*
 * The record protocol of docs/state-machine.md as a Promela model, for SPIN.
 * scripts/verify-model.mjs runs every configuration (npm run verify:model); the section
 * "The model" of docs/state-machine.md says what it proves, what it leaves out, and how to
 * read a counterexample.
 *
 * One key. The store is one record changed by atomic steps, one per backend call, with the
 * guards and writes of src/backends/memory/index.ts (the reference backend) and the Redis Lua
 * scripts. HOLDERS request handlers ("holders") take deliveries, claim, run the body (which
 * may throw, and whose heartbeat may renew), then complete or release, and ack or nack as
 * src/core/verbs.ts does. A holder may crash at any step, and the scheduler may stop it at
 * any step for as long as it likes: a stopped holder that runs again is a zombie. A request
 * times out LIFE ticks after its delivery, as Cloud Run ends a request.
 *
 * Time is a count of ticks. Every deadline is kept as the ticks left until it (0: passed)
 * rather than as an absolute time, so time can run for ever in a finite state space.
 *
 * Compile-time switches (spin -D...):
 *   VERB_MUTEX      holders run mutex() (claim, body, release always); default lock()
 *   LIVENESS        deliveries keep coming until the message is acked; faults (crashes,
 *                   timeouts, bodies that throw) are limited to FAULTS; adds the LTL (v)
 *   LEASE TTL LIFE  the lease and the ttl, and a request's life, in ticks
 *   HOLDERS         holders, 3 or 4
 *   DELIVERIES      deliveries in all, in safety runs (duplicates come even after an ack)
 *   FAULTS          crashes and throws in all, in LIVENESS runs
 *   FENCE_ONLY      check the fence invariant alone (the sizing-rule runs)
 *   FENCE_RESTARTS  a new record's fence is 1, as before issue 19 (the store forgets the fences
 *                   of a deleted record); default: it starts above every earlier fence
 *   EXCEPT_I        check every property but (i) (what the sizing rule still guards)
 *   WITNESS         n: fail when hard case n is reached, to show that it is
 *   MUTANT_*        a deliberately broken protocol, which must yield a counterexample:
 *     NO_FENCE_ON_COMPLETE     complete does not compare the fence
 *     LEASE_GUARD_ON_COMPLETE  complete refuses a claim whose lease lapsed
 *     RELEASE_DELETES          release deletes the record, and the fence restarts (with the
 *                              monotonic fence, deleting on release breaks nothing)
 *     RELEASE_KEEPS_FENCE      release leaves the fence as it was
 *     ACK_ON_HELD              the gateway acks a delivery whose key is held
 *     NO_RECLAIM               claim never takes over a lapsed lease
 */

#ifndef HOLDERS
#define HOLDERS 3
#endif
#ifndef LEASE
#define LEASE 2
#endif
#ifndef TTL
#define TTL 2
#endif
#ifndef LIFE
#define LIFE 4
#endif
#ifndef DELIVERIES
#define DELIVERIES 4
#endif
#ifndef FAULTS
#define FAULTS 1
#endif
#ifdef MUTANT_RELEASE_DELETES
#define FENCE_RESTARTS
#endif
#if HOLDERS < 3 || HOLDERS > 4
#error HOLDERS must be 3 or 4
#endif

/* What a holder is doing with its current delivery. */
#define IDLE     0  /* no delivery: between requests */
#define CLAIMING 1  /* a delivery arrived; the claim is next */
#define RUNNING  2  /* the claim was won; the body runs */
#define ACKING   3  /* LIVENESS only: the ack is next */

/* The record (absent when !rec_exists). Deadlines are ticks left: 0 means passed. */
bool rec_exists;
bool rec_done;        /* state: done, else claimed */
byte rec_fence;       /* fencingId */
byte rec_lease;       /* ticks until leaseExpiresAt (0 once done: no call reads it then) */
byte rec_exp;         /* ticks until expiresAt: expired on read at 0, deletable at 0 */

/* The holders. */
byte phase[HOLDERS];
byte fence[HOLDERS];     /* the fence of the holder's claim; 0: none */
byte life[HOLDERS];      /* ticks its current request may still run */
bool pending[HOLDERS];   /* a heartbeat renew is in flight */
bool renewed[HOLDERS];   /* the heartbeat fired in this tick: at most one renew per tick */

/*
 * Ghost state: never read by the protocol, only by the properties.
 *   owner       holder + 1 whose claim is the record's current one: the last claim won,
 *               until a release abandons it or the record is deleted; 0 when none is
 *   settled     lock: in this occurrence, a body's success reached the store while its
 *               claim was the current one (an occurrence ends when its DONE lapses)
 *   lease_mine  ticks until the end of the lease the holder was granted (claim or renew)
 *   overtaken   another body started while this one ran on a lapsed lease
 */
byte owner;
bool settled;
byte lease_mine[HOLDERS];
bool overtaken[HOLDERS];
#ifdef WITNESS
/* witness 9 only: the holder's claim was on a record since deleted, and a new one was created */
bool outlived[HOLDERS];
#define OUTLIVED(me) outlived[me]
#else
#define OUTLIVED(me) 0
#endif

/* Scratch inside d_steps, back to 0 at each step's end so it never tells states apart. */
byte ok;
byte h;

/*
 * The properties are assertions at the step that decides them; (v) is LTL, at the end.
 * FENCE_ONLY keeps the fence invariant alone, so that the counterexample of a short ttl is
 * the fence reset rather than another effect of the same short ttl.
 */
#ifdef FENCE_ONLY
#define PROPERTY(e) skip
#else
#define PROPERTY(e) assert(e)
#endif
#if defined(FENCE_ONLY) || defined(EXCEPT_I)
#define PROPERTY_I(e) skip
#else
#define PROPERTY_I(e) assert(e)
#endif

/*
 * Witnesses: with WITNESS=n, scenario n fails an assertion when it is reached, so a run
 * shows that the model does reach the hard case it exists to check. Off otherwise.
 */
#ifdef WITNESS
#define SCENARIO(n, reached) if :: WITNESS == n && (reached) -> assert(false) :: else fi
#else
#define SCENARIO(n, reached) skip
#endif

#ifdef VERB_MUTEX
#define MESSAGE(me) (me)  /* mutex: each holder carries its own message for the key */
#define MESSAGES HOLDERS
#else
#define MESSAGE(me) 0     /* lock: every delivery is of one message */
#define MESSAGES 1
#endif

#ifdef LIVENESS
bool acked[MESSAGES];
byte faults_left = FAULTS;
#define DELIVERY_READY(me) (!acked[MESSAGE(me)])
#define FAULT_READY (faults_left > 0)
#define TAKE_FAULT faults_left--
/* Speed: once the faults are spent, a holder finishes before its request times out. */
#define BUSY_DYING(i) ((phase[i] != IDLE && life[i] == 1) -> 1 : 0)
#if HOLDERS > 3
#define DYING (BUSY_DYING(0) + BUSY_DYING(1) + BUSY_DYING(2) + BUSY_DYING(3))
#else
#define DYING (BUSY_DYING(0) + BUSY_DYING(1) + BUSY_DYING(2))
#endif
#define TICK_SPEED_OK (DYING <= faults_left)
/* A timeout was paid for by the tick that ended the request's life. */
#define CRASH_READY(me) (faults_left > 0 || life[me] == 0)
#define TAKE_CRASH(me) if :: life[me] > 0 -> faults_left-- :: else fi
#else
byte deliveries_left = DELIVERIES;
#define DELIVERY_READY(me) (deliveries_left > 0)
#define FAULT_READY 1
#define TAKE_FAULT skip
#define TICK_SPEED_OK 1
#define CRASH_READY(me) 1
#define TAKE_CRASH(me) skip
#endif

#if HOLDERS > 3
#define DELIVERY_IN_FLIGHT \
  (phase[0] == CLAIMING || phase[1] == CLAIMING || phase[2] == CLAIMING || phase[3] == CLAIMING)
#else
#define DELIVERY_IN_FLIGHT (phase[0] == CLAIMING || phase[1] == CLAIMING || phase[2] == CLAIMING)
#endif

/* A request in flight reaches the store within the tick it was sent in. */
#if HOLDERS > 3
#define NONE_IN_FLIGHT (!pending[0] && !pending[1] && !pending[2] && !pending[3])
#else
#define NONE_IN_FLIGHT (!pending[0] && !pending[1] && !pending[2])
#endif

inline show_record() {
  if
  :: !rec_exists -> printf("      record: absent\n")
  :: rec_exists && rec_done ->
     printf("      record: done, fence %d, expires in %d\n", rec_fence, rec_exp)
  :: rec_exists && !rec_done ->
     printf("      record: claimed, fence %d, lease ends in %d, expires in %d\n",
       rec_fence, rec_lease, rec_exp)
  fi
}

/*
 * The fence invariant: a call whose fence matches the record's is made by the record's
 * current claim. Checked whenever the store compares a fence, before it writes anything.
 */
inline fence_invariant(me) {
  assert(!(rec_exists && rec_fence == fence[me]) || owner == me + 1)  /* fence invariant */
}

inline go_idle(me) {
  phase[me] = IDLE;
  life[me] = 0;
  lease_mine[me] = 0;
  overtaken[me] = 0;
  if
  :: !pending[me] -> fence[me] = 0  /* else the renew in flight still carries it */
  :: else
  fi
}

/* Ack the delivery: justified by the holder's own body's success, or by DONE read now. */
inline ack(me, own_body_succeeded) {
  PROPERTY(own_body_succeeded || (rec_exists && rec_done));  /* (iii) */
#ifdef LIVENESS
  phase[me] = ACKING
#else
  go_idle(me)
#endif
}

/* The claim was won, and the body starts in the same step. */
inline won(me) {
  rec_exists = 1;
  rec_done = 0;
  rec_lease = LEASE;
  rec_exp = LEASE + TTL;          /* a claimed record outlives its lease by the ttl */
  owner = me + 1;
  fence[me] = rec_fence;
#ifdef WITNESS
  outlived[me] = 0;
#endif
  lease_mine[me] = LEASE;
  printf("holder %d: claim -> won, fence %d; the body starts\n", me, rec_fence);
#ifndef VERB_MUTEX
  PROPERTY_I(!settled);           /* (i) no body starts after an accepted success */
#endif
  for (h : 0 .. HOLDERS - 1) {
    if
    :: h != me && phase[h] == RUNNING ->
       SCENARIO(2, 1);              /* witness 2: a reclaim while the old body still runs */
       PROPERTY(lease_mine[h] == 0);  /* (iv) two bodies at once only after a lease lapse */
       overtaken[h] = 1
    :: else
    fi
  };
  h = 0;
  phase[me] = RUNNING
}

/* A lapsed lease or ttl: reclaim; the record still exists, so the fence rises. */
inline reclaim(me) {
  SCENARIO(1, !rec_done && owner != 0 && phase[owner - 1] == IDLE);  /* witness 1: healed */
  SCENARIO(7, rec_done);          /* witness 7: a DONE past its ttl is claimed again */
  if
  :: rec_done -> settled = 0      /* the occurrence's DONE lapsed: a new occurrence */
  :: else
  fi;
  rec_fence++;
  won(me)
}

/*
 * A new record's first fence. The backends seed it from the store's clock in µs (or a
 * sequence) while each call adds only 1, so it lies above every fence the key ever had (given
 * their assumption: fewer fence steps than clock ticks over a record's life, a clock that never
 * steps back by more than the ttl). Fences are only ever compared for equality, and the only
 * earlier fences still in play are the ones holders carry: one above the highest of those
 * stands for any such value, and keeps the state space finite.
 */
inline first_fence() {
#ifdef WITNESS
  for (h : 0 .. HOLDERS - 1) {
    if
    :: fence[h] != 0 -> outlived[h] = 1
    :: else
    fi
  };
  h = 0;
#endif
#ifdef FENCE_RESTARTS
  rec_fence = 1
#else
  rec_fence = 0;
  for (h : 0 .. HOLDERS - 1) {
    if
    :: fence[h] > rec_fence -> rec_fence = fence[h]
    :: else
    fi
  };
  h = 0;
  rec_fence++
#endif
}

/* claim(key, lease): the claim rows of the table. */
inline claim(me) {
  if
  :: !rec_exists ->
     first_fence();
     won(me)
  :: rec_exists && rec_done && rec_exp > 0 ->
#ifdef VERB_MUTEX
     printf("holder %d: claim -> done: InProgress, nack\n", me);
     go_idle(me)
#else
     printf("holder %d: claim -> done: Duplicate, ack\n", me);
     ack(me, 0)
#endif
  :: rec_exists && !rec_done && rec_lease > 0 ->
#ifdef MUTANT_ACK_ON_HELD
     printf("holder %d: claim -> held: acked anyway\n", me);
     ack(me, 0)
#else
     printf("holder %d: claim -> held: InProgress, nack\n", me);
     go_idle(me)
#endif
  :: else ->
#ifdef MUTANT_NO_RECLAIM
     if
     :: !rec_done ->
        printf("holder %d: claim -> held (a lapsed lease, never taken over): nack\n", me);
        go_idle(me)
     :: else -> reclaim(me)
     fi
#else
     reclaim(me)
#endif
  fi
}

/* complete(claim): claimed -> done when the fence matches, with no lease guard. */
inline complete(me) {
#ifdef MUTANT_NO_FENCE_ON_COMPLETE
  ok = rec_exists && rec_exp > 0;
#else
  ok = rec_exists && rec_fence == fence[me] && rec_exp > 0;
#endif
#ifdef MUTANT_LEASE_GUARD_ON_COMPLETE
  ok = ok && (rec_done || rec_lease > 0);
#endif
  PROPERTY_I(!(ok && !rec_done) || !settled);  /* (i) DONE written once per occurrence */
  if
  :: owner == me + 1 -> settled = 1  /* this success is the occurrence's: (i) */
  :: else
  fi;
  if
  :: ok -> printf("holder %d: body succeeded; complete fence %d -> true; ack\n", me, fence[me])
  :: else -> printf("holder %d: body succeeded; complete fence %d -> false; ack\n", me, fence[me])
  fi;
  fence_invariant(me);
  SCENARIO(3, !ok && rec_exists && rec_fence != fence[me]); /* witness 3: a zombie fenced out */
  SCENARIO(9, OUTLIVED(me) && rec_exists);  /* witness 9: a call on its record's successor */
  SCENARIO(4, ok && !rec_done && rec_lease == 0);  /* witness 4: a late complete commits */
  if
  :: ok && !rec_done ->
     PROPERTY(owner == me + 1);   /* (ii) a stale fence never changes the record */
     PROPERTY(!overtaken[me]);    /* (iv) the late one is refused */
     rec_done = 1;
     rec_lease = 0;
     rec_exp = TTL
  :: else                         /* a retried complete (true), or fenced out (false) */
  fi;
  ok = 0
}

/* release(claim): the lease ends now and the fence rises; only claimed records change. */
inline release(me) {
  ok = rec_exists && !rec_done && rec_fence == fence[me] && rec_exp > 0;
  if
  :: ok ->
     printf("holder %d: release fence %d -> released\n", me, fence[me]);
     fence_invariant(me);
     PROPERTY(owner == me + 1);   /* (ii) a stale fence never changes the record */
     PROPERTY(!overtaken[me]);    /* (iv) the late one's release is refused */
#ifdef MUTANT_RELEASE_DELETES
     rec_exists = 0;
     rec_fence = 0;
     rec_lease = 0;
     rec_exp = 0;
#else
#ifndef MUTANT_RELEASE_KEEPS_FENCE
     rec_fence++;
#endif
     rec_lease = 0;
     rec_exp = TTL;
#endif
     owner = 0
  :: else ->
     printf("holder %d: release fence %d -> no-op\n", me, fence[me]);
     fence_invariant(me);
     SCENARIO(5, overtaken[me]);  /* witness 5: the overtaken one's release is refused */
     SCENARIO(9, OUTLIVED(me) && rec_exists)  /* witness 9: a call on its record's successor */
  fi;
  ok = 0
}

/* renew(claim, lease): a heartbeat renew lands; only a claimed record with its fence changes. */
inline land_renew(me) {
  ok = rec_exists && !rec_done && rec_fence == fence[me] && rec_exp > 0;
  SCENARIO(6, phase[me] != RUNNING);  /* witness 6: a renew lands after its body ended */
  SCENARIO(9, OUTLIVED(me) && rec_exists);  /* witness 9: a call on its record's successor */
  if
  :: ok ->
     printf("holder %d: renew fence %d lands -> true\n", me, fence[me]);
     fence_invariant(me);
     PROPERTY(owner == me + 1);   /* (ii) a stale fence never changes the record */
     rec_lease = LEASE;
     rec_exp = LEASE + TTL;
     if
     :: phase[me] == RUNNING -> lease_mine[me] = LEASE
     :: else
     fi
  :: else ->
     printf("holder %d: renew fence %d lands -> false\n", me, fence[me]);
     fence_invariant(me)
  fi;
  ok = 0;
  pending[me] = 0;
  if
  :: phase[me] == IDLE -> fence[me] = 0
  :: else
  fi
}

proctype Holder(byte me)
{
end_holder:
  do
  :: d_step { phase[me] == IDLE && DELIVERY_READY(me) ->
       printf("holder %d: delivery\n", me);
       phase[me] = CLAIMING;
       life[me] = LIFE;
       pending[me] = 0;           /* a new request: a renew of the old one is lost */
       fence[me] = 0;
#ifdef WITNESS
       outlived[me] = 0;
#endif
#ifndef LIVENESS
       deliveries_left--
#endif
     }
  :: d_step { phase[me] == CLAIMING && life[me] > 0 -> claim(me); show_record() }
  :: d_step { phase[me] == RUNNING && life[me] > 0 && !pending[me] && !renewed[me] ->
       printf("holder %d: heartbeat sends renew, fence %d\n", me, fence[me]);
       pending[me] = 1;
       renewed[me] = 1
     }
  :: d_step { phase[me] == RUNNING && life[me] > 0 ->
#ifdef VERB_MUTEX
       printf("holder %d: body succeeded\n", me);
       release(me);
#else
       complete(me);
#endif
       ack(me, 1);
       show_record()
     }
  :: d_step { phase[me] == RUNNING && life[me] > 0 ->
       /* complete (lock) or release (mutex) throws, or never reaches the store */
       printf("holder %d: body succeeded; the store call fails: logged, ack\n", me);
       ack(me, 1);
       show_record()
     }
  :: d_step { phase[me] == RUNNING && life[me] > 0 && FAULT_READY ->
       TAKE_FAULT;
       printf("holder %d: body threw\n", me);
       release(me);
       go_idle(me);               /* nack */
       show_record()
     }
#ifdef LIVENESS
  :: d_step { phase[me] == ACKING && life[me] > 0 ->
       printf("holder %d: acks\n", me);
       acked[MESSAGE(me)] = 1;
       go_idle(me)
     }
#endif
  :: d_step { phase[me] != IDLE && CRASH_READY(me) ->
       TAKE_CRASH(me);            /* a crash, or a timeout (life 0): no release, no ack */
       printf("holder %d: crashes or times out\n", me);
       go_idle(me)
     }
  od
}

/* The clock, the store's deletion of expired records, and renews landing. */
active proctype Environment()
{
end_environment:
  do
  :: d_step { NONE_IN_FLIGHT && TICK_SPEED_OK ->
       printf("tick\n");
       if
       :: rec_lease > 0 -> rec_lease--
       :: else
       fi;
       if
       :: rec_exp > 0 -> rec_exp--
       :: else
       fi;
       for (h : 0 .. HOLDERS - 1) {
         if
         :: life[h] > 0 -> life[h]--;
#ifdef LIVENESS
            if
            :: life[h] == 0 && phase[h] != IDLE -> faults_left--  /* a timeout is a fault */
            :: else
            fi
#endif
         :: else
         fi;
         if
         :: lease_mine[h] > 0 -> lease_mine[h]--
         :: else
         fi;
         renewed[h] = 0
       };
       h = 0
     }
  :: d_step { rec_exists && rec_exp == 0 ->
       /* Physical deletion, any time after expiresAt: the next claim starts a new record. */
       printf("store: deletes the expired record, fence %d\n", rec_fence);
       SCENARIO(8, DELIVERY_IN_FLIGHT);  /* witness 8: a deletion while a delivery waits */
       if
       :: rec_done -> settled = 0
       :: else
       fi;
       rec_exists = 0;
       rec_done = 0;
       rec_fence = 0;
       rec_lease = 0;
       owner = 0
     }
  :: d_step { pending[0] -> land_renew(0); show_record() }
  :: d_step { pending[1] -> land_renew(1); show_record() }
  :: d_step { pending[2] -> land_renew(2); show_record() }
#if HOLDERS > 3
  :: d_step { pending[3] -> land_renew(3); show_record() }
#endif
  od
}

init {
  atomic {
    for (h : 0 .. HOLDERS - 1) {
      run Holder(h)
    };
    h = 0
  }
}

/* (v) under weak fairness, the message (mutex: every message) is eventually acked. */
#ifdef LIVENESS
#ifdef VERB_MUTEX
#if HOLDERS > 3
ltl eventually_processed { <> (acked[0] && acked[1] && acked[2] && acked[3]) }
#else
ltl eventually_processed { <> (acked[0] && acked[1] && acked[2]) }
#endif
#else
ltl eventually_processed { <> acked[0] }
#endif
#endif
