%% dragnet's beam probe: runs in a hidden Erlang node beside CouchDB during one build (dragnet/measure/beam_probe.py).
%%
%% It loads nothing into CouchDB's node: every call is an rpc of an OTP function (erlang, lists, proc_lib), so
%% what runs there is what `erlang:process_info/2` and microstate accounting cost. Protocol on stdio:
%%   in:  one line "PERIOD_MS ON_MS NODE...", "begin" when the build starts (the figures count from then),
%%        then "stop" (or end of input) when it has ended;
%%   out: "ready", "begun", then at stop one tab-separated line per figure (see report/1) and "end".
-module(dragnet_beam_probe).
-export([main/0]).


%% Microstate accounting times every scheduler state change, which costs a build about a tenth of its CPU when
%% it is on throughout (benchmarks/beam_activity_overhead). So during a build it is on for the first ON_MS of
%% every period, spread evenly over the build; its counters keep counting across these windows, so they give
%% each activity's share of the time it was on, and the threads' time in all states says how long that was.
main() ->
    [PeriodText, OnText | Names] = string:lexemes(string:trim(io:get_line("")), " "),
    Period = list_to_integer(PeriodText),
    OnMs = min(Period, list_to_integer(OnText)),
    Self = self(),
    spawn_link(fun() -> wait_stop(Self) end),
    States = [start(list_to_atom(N)) || N <- Names],
    out(["ready"]),
    Final = loop(States, Period, OnMs),
    lists:foreach(fun report/1, Final),
    out(["end"]),
    halt(0).

%% "stop" or the end of input (dragnet gone) ends the probe; either way microstate accounting is turned off
wait_stop(Parent) ->
    case io:get_line("") of
        "begin" ++ _ -> Parent ! begin_build, wait_stop(Parent);
        "stop" ++ _ -> Parent ! stop;
        eof -> Parent ! stop;
        {error, _} -> Parent ! stop;
        _ -> wait_stop(Parent)
    end.

loop(States, Period, OnMs) ->
    receive
        stop -> [finish(S) || S <- States];
        begin_build ->
            Begun = [rebase(S) || S <- States],
            out(["begun"]),
            window_end(Begun, Period, OnMs),
            loop(Begun, Period, OnMs)
    after gap(Period, OnMs) ->
        Sampled = [resample(S) || S <- States],
        [msacc(S, true) || S <- Sampled, OnMs < Period],
        window_end(Sampled, Period, OnMs),
        loop(Sampled, Period, OnMs)
    end.

%% the wait between the end of one window and the next sample (msacc on throughout: the whole period)
gap(Period, Period) -> Period;
gap(Period, OnMs) -> Period - OnMs.

window_end(_, Period, Period) -> ok;
window_end(States, _, OnMs) ->
    timer:sleep(OnMs),
    [msacc(S, false) || S <- States].

msacc(#{error := _}, _) -> ok;
msacc(#{was := true}, _) -> ok;     % on before the probe: someone else's, left on
msacc(#{node := Node}, On) -> call(Node, erlang, system_flag, [microstate_accounting, On]).

start(Node) ->
    try
        true = net_kernel:connect_node(Node),
        started(Node)
    catch
        _:_ -> #{node => Node, error => "cannot connect or read it (node name or cookie)"}
    end.

started(Node) ->
    Was = call(Node, erlang, system_flag, [microstate_accounting, true]),
    true = is_boolean(Was),
    {Reds0, _} = call(Node, erlang, statistics, [exact_reductions]),
    {Gcs0, Words0, _} = call(Node, erlang, statistics, [garbage_collection]),
    S = #{node => Node, was => Was, t0 => erlang:monotonic_time(microsecond), reds0 => Reds0,
          gc0 => {Gcs0, Words0}, msacc0 => msacc_now(Node), procs => #{}, samples => 0, rpc_us => 0},
    sample(S, baseline).

%% the build starts: every figure counts from now (the processes' kinds, found already, are kept)
rebase(#{error := _} = S) -> S;
rebase(#{node := Node} = S0) ->
    #{procs := Procs} = S = sample(S0, born),
    {Reds0, _} = call(Node, erlang, statistics, [exact_reductions]),
    {Gcs0, Words0, _} = call(Node, erlang, statistics, [garbage_collection]),
    S#{procs := maps:map(fun(_, {Key, _, Last}) -> {Key, Last, Last} end, Procs), samples := 0, rpc_us := 0,
       t0 := erlang:monotonic_time(microsecond), reds0 := Reds0, gc0 := {Gcs0, Words0},
       msacc0 := msacc_now(Node)}.

%% the counters as they stand (turned on to be read: off, they read as undefined). Never reset: another probe
%% of the same node (a second build, another dragnet) counts from its own baseline, as this one does.
msacc_now(Node) ->
    call(Node, erlang, system_flag, [microstate_accounting, true]),
    maps:from_list([{{Type, Id}, Counters} || #{type := Type, id := Id, counters := Counters}
                                                  <- listed(call(Node, erlang, statistics, [microstate_accounting]))]).

%% each thread's counters since the baseline
since(Now, Before) ->
    [{Type, Id, maps:map(fun(State, Ticks) -> Ticks - maps:get(State, maps:get({Type, Id}, Before, #{}), 0) end,
                         Counters)}
     || {{Type, Id}, Counters} <- maps:to_list(Now)].

resample(#{error := _} = S) -> S;
resample(S) -> sample(S, born).

%% each process's reductions: a process there at the start counts from then, one born later from 0
sample(#{node := Node, procs := Procs, samples := N, rpc_us := Spent} = S, Origin) ->
    T0 = erlang:monotonic_time(microsecond),
    Pids = call(Node, erlang, processes, []),
    Reds = call(Node, lists, zipwith, [fun erlang:process_info/2, Pids, [reductions || _ <- Pids]]),
    case {Pids, Reds} of
        {L, R} when is_list(L), is_list(R) ->
            New = [P || P <- Pids, not maps:is_key(P, Procs)],
            Keys = maps:from_list(lists:zip(New, keys(Node, New))),
            Procs1 = lists:foldl(
                fun({P, {reductions, Now}}, Acc) ->
                        case Acc of
                            #{P := {Key, Base, _}} -> Acc#{P := {Key, Base, Now}};
                            _ when Origin =:= baseline -> Acc#{P => {maps:get(P, Keys), Now, Now}};
                            _ -> Acc#{P => {maps:get(P, Keys), 0, Now}}
                        end;
                   (_, Acc) -> Acc    % exited meanwhile
                end, Procs, lists:zip(Pids, Reds)),
            %% the samples' round trips: a bound of what they cost CouchDB's node
            S#{procs := Procs1, samples := N + 1, rpc_us := Spent + erlang:monotonic_time(microsecond) - T0};
        _ ->
            S#{error => "lost the node during the build"}
    end.

%% a process's kind: its proc_lib initial call (gen_servers), else its own, else for a spawned fun the deepest
%% frame of its stack outside generic modules (couch_mrview's mapper and writer are funs)
keys(_Node, []) -> [];
keys(Node, Pids) ->
    Translated = call(Node, lists, map, [fun proc_lib:translate_initial_call/1, Pids]),
    Infos = call(Node, lists, zipwith, [fun erlang:process_info/2, Pids,
                                        [[initial_call, current_stacktrace] || _ <- Pids]]),
    case {Translated, Infos} of
        {T, I} when is_list(T), is_list(I) -> [key(X, Y) || {X, Y} <- lists:zip(T, I)];
        _ -> ["?" || _ <- Pids]
    end.

key({proc_lib, init_p, 5}, [{initial_call, {erlang, apply, 2}}, {current_stacktrace, Stack}]) ->
    case [MFA || {M, _, _, _} = MFA <- lists:reverse(Stack), not lists:member(M, generic())] of
        [{M, F, A, _} | _] -> mfa(M, F, A);
        [] -> mfa(erlang, apply, 2)
    end;
key({proc_lib, init_p, 5}, [{initial_call, {M, F, A}}, _]) -> mfa(M, F, A);
key({M, F, A}, _) -> mfa(M, F, A);
key(_, _) -> "?".

%% frames that say nothing of what a process is for: its kind is the deepest frame outside them
generic() -> [erlang, proc_lib, gen, gen_server, gen_statem, lists, timer, erpc, rpc, prim_inet, io].

mfa(M, F, A) when is_list(A) -> mfa(M, F, length(A));
mfa(M, F, A) -> atom_to_list(M) ++ ":" ++ atom_to_list(F) ++ "/" ++ integer_to_list(A).

finish(#{error := _} = S) -> S;
finish(#{node := Node} = S0) ->
    S = sample(S0, born),
    Msacc = since(msacc_now(Node), maps:get(msacc0, S)),
    {Reds1, _} = call(Node, erlang, statistics, [exact_reductions]),
    {Gcs1, Words1, _} = call(Node, erlang, statistics, [garbage_collection]),
    PerSecond = call(Node, erlang, convert_time_unit, [1, second, perf_counter]),
    Otp = call(Node, erlang, system_info, [otp_release]),
    case maps:get(was, S) of
        false -> call(Node, erlang, system_flag, [microstate_accounting, false]);
        _ -> ok    % on before the probe: left on
    end,
    S#{msacc => Msacc, reds1 => Reds1, gc1 => {Gcs1, Words1}, per_second => PerSecond, otp => Otp,
       t1 => erlang:monotonic_time(microsecond)}.

report(#{node := Node, error := Why}) ->
    out(["error", Node, Why]);
report(#{node := Node} = S) ->
    #{t0 := T0, t1 := T1, samples := N, otp := Otp, per_second := PerSecond, rpc_us := Spent} = S,
    out(["node", Node, T1 - T0, N, Otp, PerSecond, Spent]),
    [out(["msacc", Node, Type, Id, State, Ticks])
     || {Type, Id, Counters} <- maps:get(msacc, S), {State, Ticks} <- maps:to_list(Counters)],
    {G0, W0} = maps:get(gc0, S),
    {G1, W1} = maps:get(gc1, S),
    out(["gc", Node, G1 - G0, W1 - W0]),
    out(["reds_total", Node, maps:get(reds1, S) - maps:get(reds0, S)]),
    ByKey = maps:fold(
        fun(_, {Key, Base, Last}, Acc) ->
                {R, Procs, Born} = maps:get(Key, Acc, {0, 0, 0}),
                D = Last - Base,
                Acc#{Key => {R + D, Procs + min(D, 1), Born + if Base =:= 0 -> 1; true -> 0 end}}
        end, #{}, maps:get(procs, S)),
    [out(["reds", Node, Key, R, P, B]) || {Key, {R, P, B}} <- maps:to_list(ByKey), R > 0].

listed(L) when is_list(L) -> L;
listed(_) -> [].

call(Node, M, F, A) -> rpc:call(Node, M, F, A, 30000).

out(Fields) ->
    io:put_chars([lists:join("\t", [field(F) || F <- Fields]), "\n"]).

field(F) when is_atom(F) -> atom_to_list(F);
field(F) when is_integer(F) -> integer_to_list(F);
field(F) -> F.
