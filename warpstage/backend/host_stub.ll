; The launch stub of warpstage (backend/host_stub.py's docstring says what it does). Fields
; in braces are filled by backend/host_stub_ir.py's stub_source(): context, check and entry
; field numbers, miss codes, buffer sizes.
declare ptr @PyLong_AsVoidPtr(ptr)
declare i64 @PyLong_AsLongLongAndOverflow(ptr, ptr)
declare ptr @PyLong_FromLong(i64)
declare void @Py_IncRef(ptr)
declare void @Py_DecRef(ptr)
declare void @PyErr_Clear()
declare ptr @PyEval_SaveThread()
declare void @PyEval_RestoreThread(ptr)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define internal i64 @f(ptr %c, i64 %k) alwaysinline {
  %p = getelementptr i64, ptr %c, i64 %k
  %v = load i64, ptr %p
  ret i64 %v
}
define internal ptr @fp(ptr %c, i64 %k) alwaysinline {
  %p = getelementptr ptr, ptr %c, i64 %k
  %v = load ptr, ptr %p
  ret ptr %v
}
define internal i64 @at(ptr %a, i64 %i) alwaysinline {
  %p = getelementptr i64, ptr %a, i64 %i
  %v = load i64, ptr %p
  ret i64 %v
}
define internal void @push(ptr %F, ptr %nf_p, i64 %v) alwaysinline {
  %nf = load i64, ptr %nf_p
  %p = getelementptr i64, ptr %F, i64 %nf
  store i64 %v, ptr %p
  %n2 = add i64 %nf, 1
  store i64 %n2, ptr %nf_p
  ret void
}
define internal void @push_n(ptr %F, ptr %nf_p, ptr %src, i64 %n) {
  %nf = load i64, ptr %nf_p
  %dst = getelementptr i64, ptr %F, i64 %nf
  %bytes = mul i64 %n, 8
  call void @llvm.memcpy.p0.p0.i64(ptr %dst, ptr %src, i64 %bytes, i1 false)
  %n2 = add i64 %nf, %n
  store i64 %n2, ptr %nf_p
  ret void
}
define internal i1 @same(ptr %a, ptr %b, i64 %n) {
entry:
  br label %head
head:
  %i = phi i64 [0, %entry], [%i2, %next]
  %end = icmp eq i64 %i, %n
  br i1 %end, label %yes, label %body
body:
  %x = call i64 @at(ptr %a, i64 %i)
  %y = call i64 @at(ptr %b, i64 %i)
  %eq = icmp eq i64 %x, %y
  %i2 = add i64 %i, 1
  br i1 %eq, label %next, label %no
next:
  br label %head
yes:
  ret i1 1
no:
  ret i1 0
}
define internal ptr @miss(ptr %c, i64 %r) {
  %p = getelementptr i64, ptr %c, i64 {last_reason}
  store i64 %r, ptr %p
  %o = call ptr @PyLong_FromLong(i64 %r)
  ret ptr %o
}
define internal i64 @as_int(ptr %o, ptr %ovf) alwaysinline {
  store i32 0, ptr %ovf
  %v = call i64 @PyLong_AsLongLongAndOverflow(ptr %o, ptr %ovf)
  ret i64 %v
}

; a getter's answer is the object %want (identity); an error is cleared and counts as no
define internal i1 @is(ptr %k, i64 %g, ptr %o, ptr %want) {
entry:
  %get = call ptr @fp(ptr %k, i64 %g)
  %g1 = add i64 %g, 1
  %cl = call ptr @fp(ptr %k, i64 %g1)
  %r = call ptr %get(ptr %o, ptr %cl)
  %null = icmp eq ptr %r, null
  br i1 %null, label %err, label %got
err:
  call void @PyErr_Clear()
  ret i1 0
got:
  %eq = icmp eq ptr %r, %want
  call void @Py_DecRef(ptr %r)
  ret i1 %eq
}
; what torch's DLPack reader needs not to crash: memory behind the tensor (data_ptr() answers,
; not 0: not meta, sparse, XLA or a functorch wrapper), a dtype it exports (not quantized, not
; bits), not nested
define internal i1 @readable(ptr %c, ptr %o) {
entry:
  %k = call ptr @fp(ptr %c, i64 {checks})
  %m = call ptr @fp(ptr %k, i64 {k_data_ptr})
  %p = call ptr %m(ptr %o, ptr null)
  %pnull = icmp eq ptr %p, null
  br i1 %pnull, label %err, label %got_p
got_p:
  %zero = call ptr @fp(ptr %k, i64 {k_zero})
  %is_zero = icmp eq ptr %p, %zero
  call void @Py_DecRef(ptr %p)
  br i1 %is_zero, label %no, label %dtype
dtype:
  %get = call ptr @fp(ptr %k, i64 {k_dtype_get})
  %cl = call ptr @fp(ptr %k, i64 {k_dtype_closure})
  %dt = call ptr %get(ptr %o, ptr %cl)
  %dnull = icmp eq ptr %dt, null
  br i1 %dnull, label %err, label %scan
scan:
  call void @Py_DecRef(ptr %dt)
  %nd = call i64 @f(ptr %k, i64 {k_ndtypes})
  %dts = call ptr @fp(ptr %k, i64 {k_dtypes})
  %dti = ptrtoint ptr %dt to i64
  br label %head
head:
  %i = phi i64 [0, %scan], [%i2, %body]
  %end = icmp eq i64 %i, %nd
  br i1 %end, label %no, label %body
body:
  %x = call i64 @at(ptr %dts, i64 %i)
  %hit = icmp eq i64 %x, %dti
  %i2 = add i64 %i, 1
  br i1 %hit, label %nested, label %head
nested:
  %nw = call ptr @fp(ptr %k, i64 {k_nested_want})
  %n = call i1 @is(ptr %k, i64 {k_nested_get}, ptr %o, ptr %nw)
  ret i1 %n
err:
  call void @PyErr_Clear()
  ret i1 0
no:
  ret i1 0
}

define ptr @ws_launch_stub(ptr %self, ptr %args, i64 %nargs) {
entry:
  %F = alloca [{max_facts} x i64], align 16
  %vals = alloca [{max_params} x i64], align 16
  %dlt = alloca [6 x i64], align 16
  %ovf = alloca i32
  %buf = alloca [{max_buffer} x i8], align 16
  %ptrs = alloca [{max_slots} x ptr], align 16
  %strm = alloca ptr
  %nf_p = alloca i64
  %dev_p = alloca i64
  %i_p = alloca i64
  %e_p = alloca i64
  store i64 0, ptr %nf_p
  store i64 -1, ptr %dev_p
  store i64 0, ptr %i_p
  %c = call ptr @PyLong_AsVoidPtr(ptr %self)
  %np = call i64 @f(ptr %c, i64 {nparams})
  %arity = icmp eq i64 %nargs, %np
  br i1 %arity, label %head, label %m_arity
head:
  %i = load i64, ptr %i_p
  %done = icmp eq i64 %i, %np
  br i1 %done, label %facts_done, label %body
body:
  %ap = getelementptr ptr, ptr %args, i64 %i
  %o = load ptr, ptr %ap
  %tpp = getelementptr i8, ptr %o, i64 8
  %t = load ptr, ptr %tpp
  %kinds = call ptr @fp(ptr %c, i64 {kinds})
  %k = call i64 @at(ptr %kinds, i64 %i)
  %torch = call ptr @fp(ptr %c, i64 {torch_type})
  %int_t = call ptr @fp(ptr %c, i64 {int_type})
  %bool_t = call ptr @fp(ptr %c, i64 {bool_type})
  %none = call ptr @fp(ptr %c, i64 {none})
  %is_t = icmp eq ptr %t, %torch
  %is_i = icmp eq ptr %t, %int_t
  %is_b = icmp eq ptr %t, %bool_t
  %is_n = icmp eq ptr %o, %none
  %is_ib = or i1 %is_i, %is_b
  %vp = getelementptr i64, ptr %vals, i64 %i
  switch i64 %k, label %m_arg [ i64 0, label %k_tensor
                                 i64 1, label %k_int
                                 i64 2, label %k_auto
                                 i64 3, label %k_static ]
k_tensor:
  br i1 %is_t, label %tensor, label %m_arg
k_auto:
  br i1 %is_t, label %auto_tensor, label %auto_int
auto_tensor:
  call void @push(ptr %F, ptr %nf_p, i64 5)
  br label %tensor
tensor:
  %readable = call i1 @readable(ptr %c, ptr %o)
  br i1 %readable, label %t_dlpack, label %m_arg
t_dlpack:
  %dlfn = call ptr @fp(ptr %c, i64 {dltensor})
  %rc = call i32 %dlfn(ptr %o, ptr %dlt)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %t_read, label %t_err
t_err:
  call void @PyErr_Clear()
  br label %m_arg
t_read:
  %dtp = getelementptr i8, ptr %dlt, i64 8
  %dtype32 = load i32, ptr %dtp
  %dtype64 = sext i32 %dtype32 to i64
  %want_type = call i64 @f(ptr %c, i64 {device_type})
  %on_type = icmp eq i64 %dtype64, %want_type
  br i1 %on_type, label %t_dev, label %m_arg
t_dev:
  %idp = getelementptr i8, ptr %dlt, i64 12
  %id32 = load i32, ptr %idp
  %id = sext i32 %id32 to i64
  %dev = load i64, ptr %dev_p
  %first = icmp eq i64 %dev, -1
  %same_dev = icmp eq i64 %dev, %id
  %dev_ok = or i1 %first, %same_dev
  store i64 %id, ptr %dev_p
  br i1 %dev_ok, label %t_shape, label %m_devices
t_shape:
  %ndp = getelementptr i8, ptr %dlt, i64 16
  %nd32 = load i32, ptr %ndp
  %nd = sext i32 %nd32 to i64
  %nd_ok = icmp ule i64 %nd, 16
  %stp = getelementptr i8, ptr %dlt, i64 32
  %strides = load ptr, ptr %stp
  %has_strides = icmp ne ptr %strides, null
  %read_ok = and i1 %nd_ok, %has_strides
  %nf0 = load i64, ptr %nf_p
  %two_nd = mul i64 %nd, 2
  %need = add i64 %nf0, %two_nd
  %fits = icmp ult i64 %need, {facts_room}
  %all_ok = and i1 %read_ok, %fits
  br i1 %all_ok, label %t_facts, label %m_arg
t_facts:
  %dtyp = getelementptr i8, ptr %dlt, i64 20
  %dt = load i32, ptr %dtyp
  %dt64 = zext i32 %dt to i64
  call void @push(ptr %F, ptr %nf_p, i64 %dt64)
  call void @push(ptr %F, ptr %nf_p, i64 %nd)
  %shp = getelementptr i8, ptr %dlt, i64 24
  %shape = load ptr, ptr %shp
  call void @push_n(ptr %F, ptr %nf_p, ptr %shape, i64 %nd)
  call void @push_n(ptr %F, ptr %nf_p, ptr %strides, i64 %nd)
  %data = load ptr, ptr %dlt
  %offp = getelementptr i8, ptr %dlt, i64 40
  %off = load i64, ptr %offp
  %base = ptrtoint ptr %data to i64
  %addr = add i64 %base, %off
  %mod16 = and i64 %addr, 15
  call void @push(ptr %F, ptr %nf_p, i64 %mod16)
  store i64 %addr, ptr %vp
  br label %next
k_int:
  br i1 %is_ib, label %int_read, label %m_arg
int_read:
  %iv = call i64 @as_int(ptr %o, ptr %ovf)
  %iovf = load i32, ptr %ovf
  %ino = icmp eq i32 %iovf, 0
  %lo = call ptr @fp(ptr %c, i64 {lo})
  %hi = call ptr @fp(ptr %c, i64 {hi})
  %lov = call i64 @at(ptr %lo, i64 %i)
  %hiv = call i64 @at(ptr %hi, i64 %i)
  %above = icmp sge i64 %iv, %lov
  %below = icmp sle i64 %iv, %hiv
  %inr = and i1 %above, %below
  %iok = and i1 %ino, %inr
  store i64 %iv, ptr %vp
  br i1 %iok, label %next, label %m_arg
auto_int:
  br i1 %is_i, label %ai_read, label %auto_bool
ai_read:
  %av = call i64 @as_int(ptr %o, ptr %ovf)
  %aovf = load i32, ptr %ovf
  %ano = icmp eq i32 %aovf, 0
  %shifted = add i64 %av, 2147483648
  %wide = icmp ugt i64 %shifted, 4294967295
  %tag = zext i1 %wide to i64
  store i64 %av, ptr %vp
  br i1 %ano, label %ai_push, label %m_arg
ai_push:
  call void @push(ptr %F, ptr %nf_p, i64 %tag)
  br label %next
auto_bool:
  br i1 %is_b, label %ab_read, label %auto_none
ab_read:
  %bv = call i64 @as_int(ptr %o, ptr %ovf)
  store i64 %bv, ptr %vp
  call void @push(ptr %F, ptr %nf_p, i64 3)
  br label %next
auto_none:
  br i1 %is_n, label %an_push, label %m_arg
an_push:
  call void @push(ptr %F, ptr %nf_p, i64 4)
  br label %next
k_static:
  %s_tag0 = select i1 %is_b, i64 11, i64 10
  br i1 %is_ib, label %s_read, label %s_none
s_read:
  %sv = call i64 @as_int(ptr %o, ptr %ovf)
  %sovf = load i32, ptr %ovf
  %sno = icmp eq i32 %sovf, 0
  br i1 %sno, label %s_push, label %m_arg
s_push:
  call void @push(ptr %F, ptr %nf_p, i64 %s_tag0)
  call void @push(ptr %F, ptr %nf_p, i64 %sv)
  br label %next
s_none:
  br i1 %is_n, label %sn_push, label %m_arg
sn_push:
  call void @push(ptr %F, ptr %nf_p, i64 12)
  br label %next
next:
  %nfc = load i64, ptr %nf_p
  %room = icmp ult i64 %nfc, {facts_room}
  %i2 = add i64 %i, 1
  store i64 %i2, ptr %i_p
  br i1 %room, label %head, label %m_big

facts_done:
  %devf = load i64, ptr %dev_p
  %nodev = icmp eq i64 %devf, -1
  %defdev = call i64 @f(ptr %c, i64 {default_device})
  %devx = select i1 %nodev, i64 %defdev, i64 %devf
  store i64 %devx, ptr %dev_p
  call void @push(ptr %F, ptr %nf_p, i64 %devx)
  %nf = load i64, ptr %nf_p
  %ne = call i64 @f(ptr %c, i64 {nentries})
  %ents = call ptr @fp(ptr %c, i64 {entries})
  store i64 0, ptr %e_p
  br label %e_head
e_head:
  %ei = load i64, ptr %e_p
  %e_end = icmp eq i64 %ei, %ne
  br i1 %e_end, label %no_match, label %e_body
e_body:
  %eoff = mul i64 %ei, {entry_words}
  %E = getelementptr i64, ptr %ents, i64 %eoff
  %enf = call i64 @f(ptr %E, i64 {e_nfacts})
  %ei2 = add i64 %ei, 1
  store i64 %ei2, ptr %e_p
  %same_n = icmp eq i64 %enf, %nf
  br i1 %same_n, label %e_cmp, label %e_head
e_cmp:
  %efacts = call ptr @fp(ptr %E, i64 {e_facts})
  %eq = call i1 @same(ptr %efacts, ptr %F, i64 %nf)
  br i1 %eq, label %found, label %e_head
no_match:
  %dry0 = call i64 @f(ptr %c, i64 {dry})
  %isdry0 = icmp ne i64 %dry0, 0
  br i1 %isdry0, label %nm_record, label %m_nomatch
nm_record:
  %scr = call ptr @fp(ptr %c, i64 {scratch})
  store i64 %nf, ptr %scr
  %scr1 = getelementptr i64, ptr %scr, i64 1
  %nfb = mul i64 %nf, 8
  call void @llvm.memcpy.p0.p0.i64(ptr %scr1, ptr %F, i64 %nfb, i1 false)
  br label %m_nomatch

found:
  %size = call i64 @f(ptr %E, i64 {e_size})
  %nslots = call i64 @f(ptr %E, i64 {e_nslots})
  %size_ok = icmp ule i64 %size, {max_buffer}
  %slots_ok = icmp ule i64 %nslots, {max_slots}
  %dims_ok = and i1 %size_ok, %slots_ok
  br i1 %dims_ok, label %pack, label %m_big
pack:
  %tmpl = call ptr @fp(ptr %E, i64 {e_template})
  call void @llvm.memcpy.p0.p0.i64(ptr %buf, ptr %tmpl, i64 %size, i1 false)
  %patch = call ptr @fp(ptr %E, i64 {e_patch})
  %width = call ptr @fp(ptr %E, i64 {e_width})
  store i64 0, ptr %i_p
  br label %p_head
p_head:
  %pi = load i64, ptr %i_p
  %p_end = icmp eq i64 %pi, %np
  br i1 %p_end, label %slots, label %p_body
p_body:
  %pi2 = add i64 %pi, 1
  store i64 %pi2, ptr %i_p
  %poff = call i64 @at(ptr %patch, i64 %pi)
  %pw = call i64 @at(ptr %width, i64 %pi)
  %pv = call i64 @at(ptr %vals, i64 %pi)
  %dst = getelementptr i8, ptr %buf, i64 %poff
  %skip = icmp slt i64 %poff, 0
  br i1 %skip, label %p_head, label %p_store
p_store:
  switch i64 %pw, label %p_head [ i64 1, label %w1
                                  i64 2, label %w2
                                  i64 4, label %w4
                                  i64 8, label %w8 ]
w1:
  %v1 = trunc i64 %pv to i8
  store i8 %v1, ptr %dst, align 1
  br label %p_head
w2:
  %v2 = trunc i64 %pv to i16
  store i16 %v2, ptr %dst, align 1
  br label %p_head
w4:
  %v4 = trunc i64 %pv to i32
  store i32 %v4, ptr %dst, align 1
  br label %p_head
w8:
  store i64 %pv, ptr %dst, align 1
  br label %p_head
slots:
  %offs = call ptr @fp(ptr %E, i64 {e_offsets})
  store i64 0, ptr %i_p
  br label %s_head
s_head:
  %si = load i64, ptr %i_p
  %s_end = icmp eq i64 %si, %nslots
  br i1 %s_end, label %stream, label %s_body
s_body:
  %soff = call i64 @at(ptr %offs, i64 %si)
  %slot = getelementptr i8, ptr %buf, i64 %soff
  %sp = getelementptr ptr, ptr %ptrs, i64 %si
  store ptr %slot, ptr %sp
  %si2 = add i64 %si, 1
  store i64 %si2, ptr %i_p
  br label %s_head
stream:
  store ptr null, ptr %strm
  %fixed = call i64 @f(ptr %c, i64 {has_stream})
  %is_fixed = icmp ne i64 %fixed, 0
  br i1 %is_fixed, label %st_fixed, label %st_torch
st_fixed:
  %fs = call ptr @fp(ptr %c, i64 {stream})
  store ptr %fs, ptr %strm
  br label %launch
st_torch:
  %wants = call i64 @f(ptr %E, i64 {e_torch_stream})
  %use_torch = icmp ne i64 %wants, 0
  br i1 %use_torch, label %st_ask, label %launch
st_ask:
  %sfn = call ptr @fp(ptr %c, i64 {stream_fn})
  %sdt = call i64 @f(ptr %c, i64 {device_type})
  %sdt32 = trunc i64 %sdt to i32
  %sdev = load i64, ptr %dev_p
  %sdev32 = trunc i64 %sdev to i32
  %src = call i32 %sfn(i32 %sdt32, i32 %sdev32, ptr %strm)
  %sok = icmp eq i32 %src, 0
  br i1 %sok, label %launch, label %st_err
st_err:
  call void @PyErr_Clear()
  br label %m_stream
launch:
  %fn = call ptr @fp(ptr %E, i64 {e_function})
  %smem = call i64 @f(ptr %E, i64 {e_smem})
  %s = load ptr, ptr %strm
  %gx = call i64 @f(ptr %c, i64 {gx})
  %gy = call i64 @f(ptr %c, i64 {gy})
  %gz = call i64 @f(ptr %c, i64 {gz})
  %bx = call i64 @f(ptr %c, i64 {bx})
  %by = call i64 @f(ptr %c, i64 {by})
  %bz = call i64 @f(ptr %c, i64 {bz})
  %dry = call i64 @f(ptr %c, i64 {dry})
  %isdry = icmp ne i64 %dry, 0
  br i1 %isdry, label %record, label %call
record:
  %out = call ptr @fp(ptr %c, i64 {dry_out})
  %fni = ptrtoint ptr %fn to i64
  %si_ = ptrtoint ptr %s to i64
  %devr = load i64, ptr %dev_p
  %o0 = getelementptr i64, ptr %out, i64 0
  store i64 %fni, ptr %o0
  %o1 = getelementptr i64, ptr %out, i64 1
  store i64 %gx, ptr %o1
  %o2 = getelementptr i64, ptr %out, i64 2
  store i64 %gy, ptr %o2
  %o3 = getelementptr i64, ptr %out, i64 3
  store i64 %gz, ptr %o3
  %o4 = getelementptr i64, ptr %out, i64 4
  store i64 %bx, ptr %o4
  %o5 = getelementptr i64, ptr %out, i64 5
  store i64 %by, ptr %o5
  %o6 = getelementptr i64, ptr %out, i64 6
  store i64 %bz, ptr %o6
  %o7 = getelementptr i64, ptr %out, i64 7
  store i64 %smem, ptr %o7
  %o8 = getelementptr i64, ptr %out, i64 8
  store i64 %si_, ptr %o8
  %o9 = getelementptr i64, ptr %out, i64 9
  store i64 %devr, ptr %o9
  %o10 = getelementptr i64, ptr %out, i64 10
  store i64 %size, ptr %o10
  %o11 = getelementptr i64, ptr %out, i64 11
  store i64 %nslots, ptr %o11
  %ob = getelementptr i8, ptr %out, i64 128
  call void @llvm.memcpy.p0.p0.i64(ptr %ob, ptr %buf, i64 %size, i1 false)
  br label %ok_ret
call:
  %lfn = call ptr @fp(ptr %c, i64 {launch_fn})
  %gx32 = trunc i64 %gx to i32
  %gy32 = trunc i64 %gy to i32
  %gz32 = trunc i64 %gz to i32
  %bx32 = trunc i64 %bx to i32
  %by32 = trunc i64 %by to i32
  %bz32 = trunc i64 %bz to i32
  %sm32 = trunc i64 %smem to i32
  %save = call ptr @PyEval_SaveThread()
  %err = call i32 %lfn(ptr %fn, i32 %gx32, i32 %gy32, i32 %gz32, i32 %bx32, i32 %by32, i32 %bz32, i32 %sm32, ptr %s, ptr %ptrs, ptr null)
  call void @PyEval_RestoreThread(ptr %save)
  %launched = icmp eq i32 %err, 0
  br i1 %launched, label %ok_ret, label %m_driver
ok_ret:
  %nonep = call ptr @fp(ptr %c, i64 {none})
  call void @Py_IncRef(ptr %nonep)
  ret ptr %nonep

m_arity:
  %r1 = call ptr @miss(ptr %c, i64 {miss_arity})
  ret ptr %r1
m_arg:
  %r2 = call ptr @miss(ptr %c, i64 {miss_argument})
  ret ptr %r2
m_devices:
  %r3 = call ptr @miss(ptr %c, i64 {miss_devices})
  ret ptr %r3
m_nomatch:
  %r4 = call ptr @miss(ptr %c, i64 {miss_no_match})
  ret ptr %r4
m_stream:
  %r5 = call ptr @miss(ptr %c, i64 {miss_stream})
  ret ptr %r5
m_driver:
  %r6 = call ptr @miss(ptr %c, i64 {miss_driver})
  ret ptr %r6
m_big:
  %r7 = call ptr @miss(ptr %c, i64 {miss_too_big})
  ret ptr %r7
}

; The launch object's call (jit/c_call.py, docs/launch.md "The launch glue"): METH_FASTCALL |
; METH_KEYWORDS, ``self`` a tuple whose item 0 is the context's address (item 1 keeps the
; context alive). Without keywords, on the cuda target (the target
; module's ``_override``, else ``_auto``, equals "cuda") and with every guard of the context's
; table holding (four words each: ``PyDict_GetItem(dict, name)``, or with the last word 1
; ``getattr(object, name)``, is the expected object), it runs the stub; a
; launch returns None. Anything else (keywords, another target, a guard, a stub miss) records
; the reason in ``last_reason`` and returns what the context's Python ``fallback`` returns when
; called with the same arguments (PyObject_Vectorcall: its errors propagate).
declare ptr @PyDict_GetItem(ptr, ptr)
declare i32 @PyObject_RichCompareBool(ptr, ptr, i32)
declare ptr @PyObject_Vectorcall(ptr, ptr, i64, ptr)

define ptr @ws_launch_call(ptr %pair, ptr %args, i64 %nargsf, ptr %kwnames) {
entry:
  %item0 = getelementptr i8, ptr %pair, i64 24
  %self = load ptr, ptr %item0
  %c = call ptr @PyLong_AsVoidPtr(ptr %self)
  %nargs = and i64 %nargsf, 9223372036854775807
  %kwnull = icmp eq ptr %kwnames, null
  br i1 %kwnull, label %target, label %kwcheck
kwcheck:
  %szp = getelementptr i8, ptr %kwnames, i64 16
  %sz = load i64, ptr %szp
  %nokw = icmp eq i64 %sz, 0
  br i1 %nokw, label %target, label %m_keywords
target:
  %td = call ptr @fp(ptr %c, i64 {target_dict})
  %okey = call ptr @fp(ptr %c, i64 {override_key})
  %ov = call ptr @PyDict_GetItem(ptr %td, ptr %okey)
  %none = call ptr @fp(ptr %c, i64 {none})
  %ovnone = icmp eq ptr %ov, %none
  br i1 %ovnone, label %auto, label %compare
auto:
  %akey = call ptr @fp(ptr %c, i64 {auto_key})
  %au = call ptr @PyDict_GetItem(ptr %td, ptr %akey)
  br label %compare
compare:
  %tv = phi ptr [%ov, %target], [%au, %auto]
  %cuda = call ptr @fp(ptr %c, i64 {cuda_str})
  %same = icmp eq ptr %tv, %cuda
  br i1 %same, label %guards, label %slow_compare
slow_compare:
  %tnull = icmp eq ptr %tv, null
  br i1 %tnull, label %m_target, label %rich
rich:
  %eq = call i32 @PyObject_RichCompareBool(ptr %tv, ptr %cuda, i32 2)
  %is_eq = icmp eq i32 %eq, 1
  br i1 %is_eq, label %guards, label %target_err
target_err:
  call void @PyErr_Clear()
  br label %m_target
guards:
  %ng = call i64 @f(ptr %c, i64 {nguards})
  %gt = call ptr @fp(ptr %c, i64 {guard_table})
  br label %g_head
g_head:
  %i = phi i64 [0, %guards], [%i2, %g_next]
  %g_done = icmp eq i64 %i, %ng
  br i1 %g_done, label %stub, label %g_body
g_body:
  %j = mul i64 %i, 4
  %dp = getelementptr ptr, ptr %gt, i64 %j
  %d = load ptr, ptr %dp
  %kp = getelementptr ptr, ptr %dp, i64 1
  %k = load ptr, ptr %kp
  %vp = getelementptr ptr, ptr %dp, i64 2
  %v = load ptr, ptr %vp
  %wp = getelementptr i64, ptr %dp, i64 3
  %how = load i64, ptr %wp
  %i2 = add i64 %i, 1
  %by_attr = icmp eq i64 %how, 1
  br i1 %by_attr, label %g_attr, label %g_dict
g_dict:
  %cur = call ptr @PyDict_GetItem(ptr %d, ptr %k)
  %held = icmp eq ptr %cur, %v
  br i1 %held, label %g_next, label %m_guards
g_attr:
  %got = call ptr @PyObject_GetAttr(ptr %d, ptr %k)
  %got_null = icmp eq ptr %got, null
  br i1 %got_null, label %g_attr_err, label %g_attr_cmp
g_attr_err:
  call void @PyErr_Clear()
  br label %m_guards
g_attr_cmp:
  call void @Py_DecRef(ptr %got)
  %held_a = icmp eq ptr %got, %v
  br i1 %held_a, label %g_next, label %m_guards
g_next:
  br label %g_head
stub:
  %r = call ptr @ws_launch_stub(ptr %self, ptr %args, i64 %nargs)
  %launched = icmp eq ptr %r, %none
  br i1 %launched, label %done, label %missed
done:
  ret ptr %r
missed:
  call void @Py_DecRef(ptr %r)
  br label %fallback
m_keywords:
  call void @reason(ptr %c, i64 {miss_keywords})
  br label %fallback
m_target:
  call void @reason(ptr %c, i64 {miss_target})
  br label %fallback
m_guards:
  call void @reason(ptr %c, i64 {miss_guards})
  br label %fallback
fallback:
  %fb = call ptr @fp(ptr %c, i64 {fallback})
  %res = call ptr @PyObject_Vectorcall(ptr %fb, ptr %args, i64 %nargsf, ptr %kwnames)
  ret ptr %res
}
define internal void @reason(ptr %c, i64 %r) {
  %p = getelementptr i64, ptr %c, i64 {last_reason}
  store i64 %r, ptr %p
  ret void
}

; ``Kernel.__getitem__`` (jit/kernel.py) as a method descriptor, METH_FASTCALL: ``kern[config]``
; returns the cached launch object when ``kern._last_launch`` is the tuple ``(config, launch)``
; with an equal config, or else when the dict ``kern._launches`` holds one for ``config``
; (``PyDict_GetItem``: an unhashable config is a miss), and no trace is active in any thread
; (core/trace.py's ``_active`` is the int 0); anything else returns what ``fallback(kern,
; config)`` (the Python method, which checks this thread's trace) returns. Its words
; (@ws_getitem_ctx): the name "_last_launch", the trace module's globals, "_active", the int 0,
; None, the fallback, the tuple type, the name "_launches", the dict type.
@ws_getitem_ctx = global ptr null
declare ptr @PyObject_GetAttr(ptr, ptr)

define ptr @ws_kernel_getitem(ptr %kern, ptr %args, i64 %nargsf) {
entry:
  %c = load ptr, ptr @ws_getitem_ctx
  %nargs = and i64 %nargsf, 9223372036854775807
  %none = call ptr @fp(ptr %c, i64 4)
  %one = icmp eq i64 %nargs, 1
  br i1 %one, label %look, label %slow
look:
  %config = load ptr, ptr %args
  %ln = call ptr @fp(ptr %c, i64 0)
  %last = call ptr @PyObject_GetAttr(ptr %kern, ptr %ln)
  %lnull = icmp eq ptr %last, null
  br i1 %lnull, label %clear_slow, label %have
have:
  %ltp = getelementptr i8, ptr %last, i64 8
  %lt = load ptr, ptr %ltp
  %tuple_t = call ptr @fp(ptr %c, i64 6)
  %is_tuple = icmp eq ptr %lt, %tuple_t
  br i1 %is_tuple, label %size, label %drop_slow
size:
  %lszp = getelementptr i8, ptr %last, i64 16
  %lsz = load i64, ptr %lszp
  %two = icmp eq i64 %lsz, 2
  br i1 %two, label %key, label %drop_slow
key:
  %k0p = getelementptr i8, ptr %last, i64 24
  %k0 = load ptr, ptr %k0p
  %same = icmp eq ptr %k0, %config
  br i1 %same, label %trace, label %rich
rich:
  %eq = call i32 @PyObject_RichCompareBool(ptr %k0, ptr %config, i32 2)
  %is_eq = icmp eq i32 %eq, 1
  br i1 %is_eq, label %trace, label %rich_no
rich_no:
  %neg = icmp slt i32 %eq, 0
  br i1 %neg, label %clear_drop, label %drop_slow
trace:
  %td = call ptr @fp(ptr %c, i64 1)
  %an = call ptr @fp(ptr %c, i64 2)
  %active = call ptr @PyDict_GetItem(ptr %td, ptr %an)
  %zero = call ptr @fp(ptr %c, i64 3)
  %idle = icmp eq ptr %active, %zero
  br i1 %idle, label %hit, label %drop_slow
hit:
  %l1p = getelementptr i8, ptr %last, i64 32
  %l1 = load ptr, ptr %l1p
  call void @Py_IncRef(ptr %l1)
  call void @Py_DecRef(ptr %last)
  ret ptr %l1
clear_drop:
  call void @PyErr_Clear()
  br label %drop_slow
drop_slow:
  call void @Py_DecRef(ptr %last)
  br label %dict
clear_slow:
  call void @PyErr_Clear()
  br label %dict
dict:
  %dname = call ptr @fp(ptr %c, i64 7)
  %d = call ptr @PyObject_GetAttr(ptr %kern, ptr %dname)
  %dnull = icmp eq ptr %d, null
  br i1 %dnull, label %dclear, label %dhave
dclear:
  call void @PyErr_Clear()
  br label %slow
dhave:
  %dtp = getelementptr i8, ptr %d, i64 8
  %dt = load ptr, ptr %dtp
  %dict_t = call ptr @fp(ptr %c, i64 8)
  %is_dict = icmp eq ptr %dt, %dict_t
  br i1 %is_dict, label %dget, label %ddrop
dget:
  %v = call ptr @PyDict_GetItem(ptr %d, ptr %config)
  %vnull = icmp eq ptr %v, null
  br i1 %vnull, label %ddrop, label %dtrace
dtrace:
  %td2 = call ptr @fp(ptr %c, i64 1)
  %an2 = call ptr @fp(ptr %c, i64 2)
  %active2 = call ptr @PyDict_GetItem(ptr %td2, ptr %an2)
  %zero2 = call ptr @fp(ptr %c, i64 3)
  %idle2 = icmp eq ptr %active2, %zero2
  br i1 %idle2, label %dhit, label %ddrop
dhit:
  call void @Py_IncRef(ptr %v)
  call void @Py_DecRef(ptr %d)
  ret ptr %v
ddrop:
  call void @Py_DecRef(ptr %d)
  br label %slow
slow:
  %n1 = add i64 %nargs, 1
  %stack = alloca ptr, i64 %n1
  store ptr %kern, ptr %stack
  %rest = getelementptr ptr, ptr %stack, i64 1
  %bytes = mul i64 %nargs, 8
  call void @llvm.memcpy.p0.p0.i64(ptr %rest, ptr %args, i64 %bytes, i1 false)
  %fb = call ptr @fp(ptr %c, i64 5)
  %res = call ptr @PyObject_Vectorcall(ptr %fb, ptr %stack, i64 %n1, ptr null)
  ret ptr %res
}
