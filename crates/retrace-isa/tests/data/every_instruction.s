# Every RV32/RV64 IMAFDC + Zicsr + Zifencei instruction and every alias
# objdump prints, for tests/objdump_agrees.rs. Assembled once per XLEN with
# --defsym RV64=0 or 1; the .if RV64 blocks hold the RV64-only forms.
# The assembler picks encodings, objdump prints them back, and retrace-isa
# must print the same.

	.text
	.globl	start
start:
	.option	norvc
# ---- RV32I / RV64I, 32-bit encodings
	lui	a0, 0x12345
	lui	a0, 0xfffff
	lui	zero, 1
	auipc	t1, 0
	auipc	t1, 0x80000
back:
	jal	zero, back
	jal	ra, fwd
	jal	t0, fwd
	jal	a0, back
	jalr	zero, 0(ra)
	jalr	zero, 0(t0)
	jalr	zero, 8(ra)
	jalr	zero, 0(a5)
	jalr	zero, -4(a5)
	jalr	ra, 0(a5)
	jalr	ra, 12(a5)
	jalr	t0, 0(t1)
	jalr	a0, 0(a1)
	jalr	a0, -2048(a1)
	ret
	jr	a4
	jalr	a4
fwd:
	beq	a0, a1, back
	beq	a0, zero, fwd
	beq	zero, a0, fwd
	beq	zero, zero, fwd
	bne	a0, a1, back
	bne	a0, zero, back
	blt	a0, a1, back
	blt	a0, zero, back
	blt	zero, a0, back
	blt	zero, zero, back
	bge	a0, a1, back
	bge	a0, zero, back
	bge	zero, a0, back
	bge	zero, zero, back
	bltu	a0, a1, back
	bltu	a0, zero, back
	bltu	zero, a0, back
	bgeu	a0, a1, back
	bgeu	zero, a0, back
	bgt	a0, a1, back
	ble	a0, a1, back
	bgtu	a0, a1, back
	bleu	a0, a1, back
	beqz	s1, back
	bnez	s1, back
	blez	s1, back
	bgez	s1, back
	bltz	s1, back
	bgtz	s1, back
	lb	a0, -1(sp)
	lh	a0, 2(sp)
	lw	a0, 2047(sp)
	lbu	a0, -2048(sp)
	lhu	a0, 0(a1)
	sb	a0, -1(sp)
	sh	a0, 2(sp)
	sw	zero, 2047(sp)
	addi	a0, a1, 1
	addi	a0, a1, -2048
	addi	a0, zero, 7
	addi	a0, a1, 0
	addi	zero, zero, 0
	addi	zero, a1, 5
	addi	sp, sp, -32
	slti	a0, a1, -1
	sltiu	a0, a1, 1
	sltiu	a0, a1, 2
	xori	a0, a1, -1
	xori	a0, a1, 5
	ori	a0, a1, 5
	andi	a0, a1, 255
	andi	a0, a1, -8
	slli	a0, a1, 31
	srli	a0, a1, 1
	srai	a0, a1, 17
	add	a0, a1, a2
	add	a0, zero, a2
	sub	a0, a1, a2
	sub	a0, zero, a2
	sll	a0, a1, a2
	slt	a0, a1, a2
	slt	a0, a1, zero
	slt	a0, zero, a2
	sltu	a0, a1, a2
	sltu	a0, zero, a2
	xor	a0, a1, a2
	srl	a0, a1, a2
	sra	a0, a1, a2
	or	a0, a1, a2
	and	a0, a1, a2
	nop
	li	a0, 1234
	mv	s0, a0
	not	a0, a1
	neg	a0, a1
	seqz	a0, a1
	snez	a0, a1
	sltz	a0, a1
	sgtz	a0, a1
	fence
	fence	rw, w
	fence	r, r
	fence	iorw, ow
	fence	i, o
	fence.tso
	pause
	fence.i
	ecall
	ebreak
	unimp
	mret
	sret
	wfi
	sfence.vma
	sfence.vma	a0
	sfence.vma	a0, a1
	sfence.vma	zero, a1
# ---- Zicsr
	csrrw	a0, mstatus, a1
	csrrs	a0, mstatus, a1
	csrrc	a0, mstatus, a1
	csrrwi	a0, mstatus, 1
	csrrsi	a0, mstatus, 31
	csrrci	a0, mstatus, 8
	csrr	a0, mhartid
	csrr	a0, 0x7c0
	csrr	zero, mstatus
	csrw	mtvec, a0
	csrs	mie, a0
	csrc	mip, a0
	csrwi	mscratch, 0
	csrsi	mstatus, 8
	csrci	mstatus, 8
	csrw	pmpcfg0, a0
	csrw	pmpaddr0, a0
	csrw	satp, zero
	csrr	a0, mcycle
	csrr	a0, minstret
	csrr	a0, mcycleh
	rdcycle	a0
	rdtime	a0
	rdinstret	a0
	csrr	a0, cycleh
	csrr	a0, timeh
	csrr	a0, instreth
	csrr	a0, fcsr
	csrr	a0, frm
	csrr	a0, fflags
	csrw	fcsr, a0
	csrr	a0, hpmcounter3
	csrr	a0, mhpmcounter31
	csrr	a0, tselect
	csrr	a0, dpc
	csrr	a0, mvendorid
# ---- M
	mul	a0, a1, a2
	mulh	a0, a1, a2
	mulhsu	a0, a1, a2
	mulhu	a0, a1, a2
	div	a0, a1, a2
	divu	a0, a1, a2
	rem	a0, a1, a2
	remu	a0, a1, a2
# ---- A
	lr.w	a0, (a1)
	sc.w	a0, a2, (a1)
	amoswap.w	a0, a2, (a1)
	amoadd.w	a0, a2, (a1)
	amoxor.w	a0, a2, (a1)
	amoand.w	a0, a2, (a1)
	amoor.w	a0, a2, (a1)
	amomin.w	a0, a2, (a1)
	amomax.w	a0, a2, (a1)
	amominu.w	a0, a2, (a1)
	amomaxu.w	a0, a2, (a1)
	lr.w.aq	a0, (a1)
	sc.w.aq	a0, a2, (a1)
	amoswap.w.aq	a0, a2, (a1)
	amoadd.w.aq	a0, a2, (a1)
	amoxor.w.aq	a0, a2, (a1)
	amoand.w.aq	a0, a2, (a1)
	amoor.w.aq	a0, a2, (a1)
	amomin.w.aq	a0, a2, (a1)
	amomax.w.aq	a0, a2, (a1)
	amominu.w.aq	a0, a2, (a1)
	amomaxu.w.aq	a0, a2, (a1)
	lr.w.rl	a0, (a1)
	sc.w.rl	a0, a2, (a1)
	amoswap.w.rl	a0, a2, (a1)
	amoadd.w.rl	a0, a2, (a1)
	amoxor.w.rl	a0, a2, (a1)
	amoand.w.rl	a0, a2, (a1)
	amoor.w.rl	a0, a2, (a1)
	amomin.w.rl	a0, a2, (a1)
	amomax.w.rl	a0, a2, (a1)
	amominu.w.rl	a0, a2, (a1)
	amomaxu.w.rl	a0, a2, (a1)
	lr.w.aqrl	a0, (a1)
	sc.w.aqrl	a0, a2, (a1)
	amoswap.w.aqrl	a0, a2, (a1)
	amoadd.w.aqrl	a0, a2, (a1)
	amoxor.w.aqrl	a0, a2, (a1)
	amoand.w.aqrl	a0, a2, (a1)
	amoor.w.aqrl	a0, a2, (a1)
	amomin.w.aqrl	a0, a2, (a1)
	amomax.w.aqrl	a0, a2, (a1)
	amominu.w.aqrl	a0, a2, (a1)
	amomaxu.w.aqrl	a0, a2, (a1)
.if RV64
# ---- RV64-only, 32-bit encodings
	ld	a0, -8(sp)
	lwu	a0, 4(sp)
	sd	a0, 2040(sp)
	addiw	a0, a1, 1
	addiw	a0, a1, -1
	sext.w	a0, a1
	slli	a0, a1, 63
	srli	a0, a1, 32
	srai	a0, a1, 63
	slliw	a0, a1, 31
	srliw	a0, a1, 1
	sraiw	a0, a1, 7
	addw	a0, a1, a2
	subw	a0, a1, a2
	negw	a0, a1
	sllw	a0, a1, a2
	srlw	a0, a1, a2
	sraw	a0, a1, a2
	mulw	a0, a1, a2
	divw	a0, a1, a2
	divuw	a0, a1, a2
	remw	a0, a1, a2
	remuw	a0, a1, a2
	lr.d	a0, (a1)
	sc.d	a0, a2, (a1)
	amoswap.d	a0, a2, (a1)
	amoadd.d	a0, a2, (a1)
	amoxor.d	a0, a2, (a1)
	amoand.d	a0, a2, (a1)
	amoor.d	a0, a2, (a1)
	amomin.d	a0, a2, (a1)
	amomax.d	a0, a2, (a1)
	amominu.d	a0, a2, (a1)
	amomaxu.d	a0, a2, (a1)
	lr.d.aq	a0, (a1)
	sc.d.aq	a0, a2, (a1)
	amoswap.d.aq	a0, a2, (a1)
	amoadd.d.aq	a0, a2, (a1)
	amoxor.d.aq	a0, a2, (a1)
	amoand.d.aq	a0, a2, (a1)
	amoor.d.aq	a0, a2, (a1)
	amomin.d.aq	a0, a2, (a1)
	amomax.d.aq	a0, a2, (a1)
	amominu.d.aq	a0, a2, (a1)
	amomaxu.d.aq	a0, a2, (a1)
	lr.d.rl	a0, (a1)
	sc.d.rl	a0, a2, (a1)
	amoswap.d.rl	a0, a2, (a1)
	amoadd.d.rl	a0, a2, (a1)
	amoxor.d.rl	a0, a2, (a1)
	amoand.d.rl	a0, a2, (a1)
	amoor.d.rl	a0, a2, (a1)
	amomin.d.rl	a0, a2, (a1)
	amomax.d.rl	a0, a2, (a1)
	amominu.d.rl	a0, a2, (a1)
	amomaxu.d.rl	a0, a2, (a1)
	lr.d.aqrl	a0, (a1)
	sc.d.aqrl	a0, a2, (a1)
	amoswap.d.aqrl	a0, a2, (a1)
	amoadd.d.aqrl	a0, a2, (a1)
	amoxor.d.aqrl	a0, a2, (a1)
	amoand.d.aqrl	a0, a2, (a1)
	amoor.d.aqrl	a0, a2, (a1)
	amomin.d.aqrl	a0, a2, (a1)
	amomax.d.aqrl	a0, a2, (a1)
	amominu.d.aqrl	a0, a2, (a1)
	amomaxu.d.aqrl	a0, a2, (a1)
.else
	rdcycleh	a0
	rdtimeh	a0
	rdinstreth	a0
.endif

# ---- C, written explicitly so each form is certain to be compressed
	.option	rvc
cback:
	c.addi4spn	a0, sp, 4
	c.addi4spn	s1, sp, 1020
	c.lw	a0, 0(a1)
	c.lw	a5, 124(s0)
	c.sw	a0, 64(a1)
	c.nop
	c.addi	a0, 1
	c.addi	a0, -32
	c.li	a0, 31
	c.li	a0, -32
	c.addi16sp	sp, -512
	c.addi16sp	sp, 496
	c.lui	a0, 1
	c.lui	a0, 0xfffff
	c.lui	a0, 0x1f
	c.srli	a0, 1
	c.srli	s1, 31
	c.srai	a0, 1
	c.andi	a0, -1
	c.andi	a0, 31
	c.sub	a0, a1
	c.xor	a0, a1
	c.or	a0, a1
	c.and	a0, a1
	c.j	cback
	c.beqz	a0, cback
	c.bnez	a0, cfwd
	c.slli	a0, 1
	c.slli	ra, 31
	c.lwsp	a0, 0(sp)
	c.lwsp	ra, 252(sp)
	c.jr	ra
	c.jr	a0
	c.mv	a0, a1
	c.ebreak
	c.jalr	a0
	c.jalr	ra
	c.add	a0, a1
	c.swsp	a0, 0(sp)
	c.swsp	ra, 252(sp)
cfwd:
.if RV64
	c.ld	a0, 0(a1)
	c.ld	a0, 248(a1)
	c.sd	a0, 8(a1)
	c.addiw	a0, 1
	c.addiw	a0, 0
	c.addiw	a0, -32
	c.srli	a0, 63
	c.srai	a0, 32
	c.slli	a0, 63
	c.subw	a0, a1
	c.addw	a0, a1
	c.ldsp	a0, 0(sp)
	c.ldsp	ra, 504(sp)
	c.sdsp	a0, 504(sp)
.else
	c.jal	cback
	c.jal	cfwd2
.endif
cfwd2:
# HINTs in compressed form, written as raw halfwords
	.insn	2, 0x4001
	.insn	2, 0x0005
	.insn	2, 0x6001 | (1 << 2)
	.insn	2, 0x0002 | (10 << 7)
	.insn	2, 0x8001 | (2 << 7)
	.insn	2, 0x8401 | (2 << 7)
	.insn	2, 0x0501
	.insn	2, 0x8002 | (11 << 2)
	.insn	2, 0x9002 | (11 << 2)
	.insn	2, 0x0000
# Unsupported and reserved words: both sides must reject them.
	.insn	4, 0x00051507
	.insn	4, 0x20b52533
	.insn	4, 0x0000000b
	.insn	2, 0x2000
# ---- F and D (32-bit encodings first, then the compressed loads/stores)
	.option	norvc
	flw	fa0, 0(a0)
	flw	ft0, -2048(sp)
	fsw	fs11, 2047(a1)
	fld	fa0, 8(a0)
	fsd	ft11, -8(s0)
	fmadd.s	fa0, fa1, fa2, fa3
	fmadd.s	fa0, fa1, fa2, fa3, rne
	fmsub.s	ft0, ft1, ft2, ft3, rtz
	fnmsub.s	fs0, fs1, fs2, fs3, rdn
	fnmadd.s	ft8, ft9, ft10, ft11, rup
	fmadd.d	fa0, fa1, fa2, fa3, rmm
	fmsub.d	fa0, fa1, fa2, fa3
	fnmsub.d	fa0, fa1, fa2, fa3
	fnmadd.d	fa0, fa1, fa2, fa3, rtz
	fadd.s	fa0, fa1, fa2
	fsub.s	fa0, fa1, fa2, rtz
	fmul.s	fa0, fa1, fa2, rne
	fdiv.s	fa0, fa1, fa2, rmm
	fsqrt.s	fa0, fa1
	fsqrt.s	fa0, fa1, rup
	fadd.d	fa0, fa1, fa2, rdn
	fsub.d	fa0, fa1, fa2
	fmul.d	fa0, fa1, fa2
	fdiv.d	fa0, fa1, fa2, rtz
	fsqrt.d	fa0, fa1
	fsgnj.s	fa0, fa1, fa2
	fsgnjn.s	fa0, fa1, fa2
	fsgnjx.s	fa0, fa1, fa2
	fmv.s	fa0, fa1
	fneg.s	fa0, fa1
	fabs.s	fa0, fa1
	fsgnj.d	fa0, fa1, fa2
	fsgnjn.d	fa0, fa1, fa2
	fsgnjx.d	fa0, fa1, fa2
	fmv.d	fa0, fa1
	fneg.d	fa0, fa1
	fabs.d	fa0, fa1
	fmin.s	fa0, fa1, fa2
	fmax.s	fa0, fa1, fa2
	fmin.d	fa0, fa1, fa2
	fmax.d	fa0, fa1, fa2
	fcvt.w.s	a0, fa0
	fcvt.w.s	a0, fa0, rtz
	fcvt.wu.s	a0, fa0, rtz
	fcvt.s.w	fa0, a0
	fcvt.s.wu	fa0, a0, rne
	fcvt.w.d	a0, fa0, rtz
	fcvt.wu.d	zero, ft0
	fcvt.d.w	fa0, a0
	fcvt.d.wu	fa0, zero
	fcvt.s.d	fa0, fa1
	fcvt.s.d	fa0, fa1, rne
	fcvt.d.s	fa0, fa1
	fmv.x.w	a0, fa0
	fmv.w.x	fa0, a0
	feq.s	a0, fa0, fa1
	flt.s	a0, fa0, fa1
	fle.s	a0, fa0, fa1
	feq.d	a0, fa0, fa1
	flt.d	a0, fa0, fa1
	fle.d	a0, fa0, fa1
	fclass.s	a0, fa0
	fclass.d	a0, fa0
	frcsr	a0
	fscsr	a0
	fscsr	a1, a0
	frrm	a0
	fsrm	a0
	fsrm	a1, a0
	fsrmi	a0, 3
	fsrmi	3
	frflags	a0
	fsflags	a0
	fsflags	a1, a0
	fsflagsi	a0, 31
	fsflagsi	1
	csrs	fflags, a0
	csrc	frm, a0
	csrwi	fcsr, 1
.if RV64
	fcvt.l.s	a0, fa0
	fcvt.lu.s	a0, fa0, rtz
	fcvt.s.l	fa0, a0
	fcvt.s.lu	fa0, a0, rup
	fcvt.l.d	a0, fa0, rtz
	fcvt.lu.d	a0, fa0
	fcvt.d.l	fa0, a0
	fcvt.d.lu	fa0, a0, rne
	fmv.x.d	a0, fa0
	fmv.d.x	fa0, a0
.endif
	.option	rvc
	c.fld	fa0, 0(a1)
	c.fld	fs0, 248(a5)
	c.fsd	fa0, 8(a1)
	c.fldsp	ft0, 0(sp)
	c.fldsp	fa0, 504(sp)
	c.fsdsp	ft11, 504(sp)
.if RV64 == 0
	c.flw	fa0, 0(a1)
	c.flw	fs0, 124(a5)
	c.fsw	fa0, 4(a1)
	c.flwsp	ft0, 0(sp)
	c.flwsp	fa0, 252(sp)
	c.fswsp	ft11, 252(sp)
.endif
